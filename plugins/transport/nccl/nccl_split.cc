// SPDX-License-Identifier: Apache-2.0
// Child communicators for the core's groups: ncclCommSplit of this instance's
// communicator, called by every rank of it, each child a Context of its own (own stream,
// own collectives in flight) that shares the parent's libraries, host services and GPU.
#include "nccl_context.h"
#include "nccl_error.h"

#include <thread>

namespace dt::nccl {

ncclResult_t Context::await_comm(ncclComm_t c, std::chrono::steady_clock::time_point deadline,
                                 bool *timed_out) {
    *timed_out = false;
    for (;;) {
        ncclResult_t state = ncclSuccess;
        ncclResult_t rc = lib_.nccl.CommGetAsyncError(c, &state);
        if (rc != ncclSuccess) return rc;
        if (state != ncclInProgress) return state;
        if (std::chrono::steady_clock::now() >= deadline) {
            *timed_out = true;
            return ncclInProgress;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

int32_t Context::split(int32_t color, int32_t key, int32_t child_size, int32_t timeout_ms,
                       void **child) {
    *child = nullptr;
    if (lib_.nccl.CommSplit == nullptr) {
        int version = 0;
        lib_.nccl.GetVersion(&version);
        host_.set_error("nccl: the loaded NCCL (" + lib_.nccl_path + ", version " +
                        std::to_string(version) + ") has no ncclCommSplit, which NCCL 2.18 "
                        "and newer have: a group's device collectives are staged instead");
        return DTP_ERR_UNSUPPORTED;
    }
    if (color >= 0 && (child_size < 1 || child_size > size_ || key < 0 || key >= child_size)) {
        host_.set_error("nccl: split: key " + std::to_string(key) + " is not a rank of a "
                        "child of " + std::to_string(child_size) + " ranks (of " +
                        std::to_string(size_) + ")");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (broken_ != DTP_OK) {
        host_.set_error(broken_why_);
        return broken_;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
    // NCCL wants the parent idle: what is still in flight on it finishes first.
    while (!ops_.empty()) {
        int32_t rc = progress(1);
        if (rc != DTP_OK) return rc;
        if (timeout_ms > 0 && std::chrono::steady_clock::now() >= deadline && !ops_.empty()) {
            host_.set_error("nccl: split: the collectives in flight did not finish within " +
                            std::to_string(timeout_ms) + " ms");
            return DTP_ERR_TIMEOUT;
        }
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "disttrain-group";
    OnDevice on(*this);
    ncclComm_t made = nullptr;
    ncclResult_t rc = lib_.nccl.CommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                          &made, &config);
    bool timed_out = false;
    if (rc == ncclSuccess || rc == ncclInProgress) {
        // A rank without a color has no child to poll: the parent reports the split.
        rc = await_comm(made != nullptr ? made : comm_,
                        timeout_ms > 0 ? deadline : std::chrono::steady_clock::time_point::max(),
                        &timed_out);
    }
    if (rc != ncclSuccess) {
        std::string why = timed_out ? "did not finish within " + std::to_string(timeout_ms) +
                                          " ms; the parent communicator was aborted"
                                    : "failed: " + lib_.nccl.describe(rc, made != nullptr ? made : comm_);
        if (made != nullptr) lib_.nccl.CommAbort(made);
        // The parent took part in a collective that did not complete: it cannot be trusted.
        break_comm("nccl: ncclCommSplit (color " + std::to_string(color) + ", key " +
                   std::to_string(key) + ") " + why);
        host_.set_error(broken_why_);
        return timed_out ? DTP_ERR_TIMEOUT : DTP_ERR_TRANSPORT;
    }
    if (made == nullptr) return DTP_OK;
    *child = new Context(*this, made, key, child_size);
    return DTP_OK;
}

Context::Context(Context &parent, ncclComm_t comm, int rank, int size)
    : host_(parent.host_), lib_(parent.lib_), rank_(rank), size_(size),
      device_(parent.device_), timeout_ms_(parent.timeout_ms_), deadline_(parent.deadline_),
      comm_(comm), host_wait_(parent.host_wait_), parent_(&parent) {
    OnDevice on(*this);
    cudaError_t rc = lib_.cuda.StreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    void *p = nullptr;
    if (rc == cudaSuccess) rc = lib_.cuda.Malloc(&p, sizeof(float));
    if (rc != cudaSuccess) {
        if (stream_ != nullptr) lib_.cuda.StreamDestroy(stream_);
        lib_.nccl.CommAbort(comm_);
        throw NcclError(DTP_ERR_TRANSPORT, "nccl: setting up a group's communicator on GPU " +
                        std::to_string(device_) + " failed: " + lib_.cuda.describe(rc));
    }
    scratch_ = static_cast<float *>(p);
    parent.children_.push_back(this);
    host_.log(DT_LOG_DEBUG, "group communicator: rank " + std::to_string(rank_) + " of " +
              std::to_string(size_) + " (ncclCommSplit)");
}

} // namespace dt::nccl

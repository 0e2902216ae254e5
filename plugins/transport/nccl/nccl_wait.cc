// SPDX-License-Identifier: Apache-2.0
// wait_event: the producer's event, recorded by the core on the producer's stream, made
// a dependency of the plugin's stream with cudaStreamWaitEvent, so the collectives
// launched after it wait on the GPU instead of the core waiting on the host (the order
// PyTorch's ProcessGroupNCCL uses). Only the cuda memory provider's events are CUDA
// events; any other provider's are refused, and the core then waits on the host.
#include "nccl_context.h"

#include <cstdlib>
#include <cstring>

namespace dt::nccl {

// DISTTRAIN_NCCL_HOST_WAIT=1 refuses every event, so the core waits on the host as it
// did before wait_event existed: one run of a benchmark can show both orders.
std::string Context::read_host_wait() {
    const char *v = std::getenv("DISTTRAIN_NCCL_HOST_WAIT");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return "";
    if (std::strcmp(v, "1") == 0) {
        host_wait_ = true;
        return "";
    }
    return std::string("DISTTRAIN_NCCL_HOST_WAIT='") + v + "' is neither 1 (the core waits "
           "for the producer's event on the host) nor 0 or unset (the GPU waits for it)";
}

int32_t Context::wait_event(const char *runtime, void *event) {
    if (runtime == nullptr || std::strcmp(runtime, "cuda") != 0) {
        host_.set_error(std::string("nccl: the events of memory provider '") +
                        (runtime != nullptr ? runtime : "(null)") + "' are not CUDA "
                        "events; only the cuda provider's can be waited for on the GPU");
        return DTP_ERR_UNSUPPORTED;
    }
    if (host_wait_) {
        host_.set_error("nccl: DISTTRAIN_NCCL_HOST_WAIT=1 asks the core to wait for the "
                        "producer on the host");
        return DTP_ERR_UNSUPPORTED;
    }
    if (event == nullptr) {
        host_.set_error("nccl: wait_event: event is NULL");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (broken_ != DTP_OK) {
        host_.set_error(broken_why_);
        return broken_;
    }
    OnDevice on(*this);
    // A producer already done needs no dependency: the query costs less than a stream
    // wait, and small collectives right after a finished producer are the common case.
    cudaError_t done = lib_.cuda.EventQuery(static_cast<cudaEvent_t>(event));
    if (done == cudaSuccess) return DTP_OK;
    if (done != cudaErrorNotReady) lib_.cuda.GetLastError(); // the stream wait says why
    // Captures the event's newest record now: the core may record it again or destroy
    // it once this returns.
    cudaError_t rc = lib_.cuda.StreamWaitEvent(stream_, static_cast<cudaEvent_t>(event), 0);
    if (rc != cudaSuccess) {
        lib_.cuda.GetLastError();
        host_.set_error("nccl: cudaStreamWaitEvent on the plugin's stream (GPU " +
                        std::to_string(device_) + ") failed: " + lib_.cuda.describe(rc));
        return DTP_ERR_TRANSPORT;
    }
    return DTP_OK;
}

} // namespace dt::nccl

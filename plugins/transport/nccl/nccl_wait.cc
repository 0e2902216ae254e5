// SPDX-License-Identifier: Apache-2.0
// How a collective waits for the producer of its buffers, on the GPU.
// wait_event: the producer's event, recorded by the core on the producer's stream, made
// a dependency of the plugin's stream with cudaStreamWaitEvent, so the collectives
// launched after it wait on the GPU instead of the core waiting on the host (the order
// PyTorch's ProcessGroupNCCL uses). Only the cuda memory provider's events are CUDA
// events; any other provider's are refused, and the core then waits on the host.
// launch_on_stream: a blocking call's collective launched on the producer's stream
// itself, which orders it with no event at all (ProcessGroupNCCL's order for
// async_op=False since PyTorch 2.7).
#include "nccl_context.h"

#include <cstdlib>
#include <cstring>

namespace dt::nccl {

namespace {

// The runtime's name for its streams and events; any other provider's handles are not
// CUDA's and would be misread.
bool is_cuda(const char *runtime) {
    return runtime != nullptr && std::strcmp(runtime, "cuda") == 0;
}

} // namespace

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

int32_t Context::refuse_device_order(const char *runtime, const char *handles) {
    if (!is_cuda(runtime)) {
        host_.set_error(std::string("nccl: the ") + handles + " of memory provider '" +
                        (runtime != nullptr ? runtime : "(null)") + "' are not CUDA " +
                        handles + "; only the cuda provider's can order NCCL's kernels");
        return DTP_ERR_UNSUPPORTED;
    }
    if (host_wait_) {
        host_.set_error("nccl: DISTTRAIN_NCCL_HOST_WAIT=1 asks the core to wait for the "
                        "producer on the host");
        return DTP_ERR_UNSUPPORTED;
    }
    return DTP_OK;
}

int32_t Context::wait_event(const char *runtime, void *event) {
    if (int32_t refused = refuse_device_order(runtime, "events"); refused != DTP_OK)
        return refused;
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

int32_t Context::launch_on_stream(const char *runtime, void *stream) {
    if (int32_t refused = refuse_device_order(runtime, "streams"); refused != DTP_OK)
        return refused;
    if (batch_ != 0) {
        host_.set_error("nccl: launch_on_stream inside a batch: a batch runs on the "
                        "plugin's stream");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (broken_ != DTP_OK) {
        host_.set_error(broken_why_);
        return broken_;
    }
    auto s = static_cast<cudaStream_t>(stream);
    int device = device_;
    if (s != nullptr && lib_.cuda.StreamGetDevice != nullptr &&
        lib_.cuda.StreamGetDevice(s, &device) != cudaSuccess) {
        lib_.cuda.GetLastError();
        device = device_; // the launch itself will say what is wrong with the stream
    }
    if (device != device_) return wait_for_foreign_stream(s, device);
    launch_stream_ = s;
    launch_stream_set_ = true;
    return DTP_OK;
}

int32_t Context::wait_for_foreign_stream(cudaStream_t stream, int device) {
    int previous = -1;
    lib_.cuda.GetDevice(&previous);
    // An event is recorded only on a stream of its own GPU: one made on the stream's.
    cudaEvent_t event = nullptr;
    const char *step = "cudaSetDevice";
    cudaError_t rc = lib_.cuda.SetDevice(device);
    if (rc == cudaSuccess) {
        step = "cudaEventCreateWithFlags";
        rc = lib_.cuda.EventCreateWithFlags(&event, cudaEventDisableTiming);
    }
    if (rc == cudaSuccess) {
        step = "cudaEventRecord";
        rc = lib_.cuda.EventRecord(event, stream);
    }
    if (rc == cudaSuccess) {
        step = "cudaStreamWaitEvent";
        rc = lib_.cuda.StreamWaitEvent(stream_, event, 0); // across GPUs, as CUDA allows
    }
    // Destroying it now is safe: CUDA releases a pending event once it completes, and the
    // wait captured its record.
    if (event != nullptr) lib_.cuda.EventDestroy(event);
    if (previous >= 0) lib_.cuda.SetDevice(previous);
    if (rc == cudaSuccess) return DTP_OK;
    lib_.cuda.GetLastError();
    host_.set_error("nccl: ordering the collective after a stream of GPU " +
                    std::to_string(device) + " (the communicator's is GPU " +
                    std::to_string(device_) + "): " + step + " failed: " +
                    lib_.cuda.describe(rc));
    return DTP_ERR_TRANSPORT;
}

} // namespace dt::nccl

// SPDX-License-Identifier: Apache-2.0
// A test-only stand-in for the CUDA runtime (libcudart-mock.so), loaded by the nccl
// transport through DISTTRAIN_CUDA_RUNTIME_LIBRARY; built a second time as
// cudart13/libcudart.so.13 (soname and symbol version of the real one), which the cuda
// memory provider, linked against libcudart.so.13, picks up through LD_LIBRARY_PATH, so
// one process has one mock runtime shared by the provider and the plugin. It exports just
// the functions those two call. Its "device memory" is host memory (cudaMalloc's blocks
// are remembered, so cudaPointerGetAttributes calls them device memory). Its streams
// model ordering as a GPU's do, with the fake device's streams (worker threads running
// their queue in order, ../fakedevice/fakedevice_stream.h): copies run on them after a
// delay, an event completes when its stream reaches its newest record, and
// cudaStreamWaitEvent holds a stream's later work until the event's record at the time
// of the call has completed. The mock NCCL records an event of its own on the stream of
// each collective and reads the send buffer only once that event has been reached
// (cudaMockEventReached), so a collective ordered after a slow producer on the device
// sees the producer's data, and one that is not ordered reads stale data.
//
//   DISTTRAIN_MOCK_CUDA_DEVICES=N       cudaGetDeviceCount's answer (default 1); 0 fails
//                                       it with cudaErrorNoDevice, as a machine without
//                                       a GPU would
//   DISTTRAIN_MOCK_CUDA_EVENT_POLLS=K   cudaEventQuery answers cudaErrorNotReady K more
//                                       times per record after its stream reached it
//                                       (default 1); "never": the event never completes
//   DISTTRAIN_MOCK_CUDA_COPY_DELAY_US=U each cudaMemcpyAsync runs U microseconds after
//                                       its stream reaches it (default 0): a slow producer
//   DISTTRAIN_MOCK_CUDA_LOG=path        appends "cudaStreamWaitEvent" per such call, so a
//                                       test can count the waits queued on the device
#include "../fakedevice/fakedevice_stream.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>

struct CUevent_st {
    std::shared_ptr<fakedevice::Event> event = std::make_shared<fakedevice::Event>();
    long polls_left = 0;
};
struct CUstream_st {
    fakedevice::Stream queue;
    int device; // current when it was created, as a real stream's
    CUstream_st(std::chrono::microseconds delay, int on) : queue(delay), device(on) {}
};

namespace {

thread_local int current_device = 0;
thread_local cudaError_t last_error = cudaSuccess;

long env_long(const char *name, long fallback) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    if (std::strcmp(v, "never") == 0) return -1;
    return std::strtol(v, nullptr, 10);
}

cudaError_t fail(cudaError_t rc) {
    last_error = rc;
    return rc;
}

std::chrono::microseconds copy_delay() {
    return std::chrono::microseconds(env_long("DISTTRAIN_MOCK_CUDA_COPY_DELAY_US", 0));
}

// The legacy default stream (stream 0). Never destroyed: its worker may still run when
// the process exits.
fakedevice::Stream &queue_of(cudaStream_t s) {
    if (s != nullptr) return s->queue;
    static CUstream_st *legacy = new CUstream_st(copy_delay(), 0);
    return legacy->queue;
}

// cudaMalloc's blocks (start, bytes), for cudaPointerGetAttributes.
std::mutex blocks_mutex;
std::map<const char *, size_t> device_blocks;

void log_call(const char *what) {
    const char *path = std::getenv("DISTTRAIN_MOCK_CUDA_LOG");
    if (path == nullptr || *path == '\0') return;
    if (FILE *f = std::fopen(path, "a")) {
        std::fprintf(f, "%s\n", what);
        std::fclose(f);
    }
}

} // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
    long n = env_long("DISTTRAIN_MOCK_CUDA_DEVICES", 1);
    if (n <= 0) {
        *count = 0;
        return fail(cudaErrorNoDevice);
    }
    *count = static_cast<int>(n);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
    *device = current_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= env_long("DISTTRAIN_MOCK_CUDA_DEVICES", 1)) {
        return fail(cudaErrorInvalidDevice);
    }
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
    return cudaSetDevice(device);
}

const char *cudaGetErrorName(cudaError_t rc) {
    switch (rc) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t rc) {
    switch (rc) {
    case cudaSuccess: return "no error";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (mock)";
    case cudaErrorInvalidDevice: return "invalid device ordinal (mock)";
    case cudaErrorNotReady: return "device not ready (mock)";
    case cudaErrorMemoryAllocation: return "out of memory (mock)";
    case cudaErrorInvalidValue: return "invalid argument (mock)";
    default: return "unknown error (mock)";
    }
}

cudaError_t cudaGetLastError(void) {
    cudaError_t rc = last_error;
    last_error = cudaSuccess;
    return rc;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int) {
    *stream = new CUstream_st(copy_delay(), current_device);
    return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t stream, int *device) {
    if (device == nullptr) return fail(cudaErrorInvalidValue);
    *device = stream != nullptr ? stream->device : current_device;
    return cudaSuccess;
}

// Runs what is queued (as CUDA lets queued work finish), then releases the stream.
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
    *event = new CUevent_st;
    return cudaSuccess;
}

// The stream queues share the event's state, so a pending event may be destroyed.
cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    if (event == nullptr) return fail(cudaErrorInvalidValue);
    event->polls_left = env_long("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", 1);
    queue_of(stream).record(event->event);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    if (event == nullptr) return fail(cudaErrorInvalidValue);
    if (!event->event->done()) return cudaErrorNotReady;
    if (event->polls_left < 0) return cudaErrorNotReady; // "never"
    if (event->polls_left > 0) {
        --event->polls_left;
        return cudaErrorNotReady;
    }
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
    if (event == nullptr) return fail(cudaErrorInvalidValue);
    log_call("cudaStreamWaitEvent");
    queue_of(stream).wait(event->event);
    return cudaSuccess;
}

// Mock only: whether the event's stream has reached its newest record, without the
// extra polls of DISTTRAIN_MOCK_CUDA_EVENT_POLLS (the mock NCCL's view of its stream).
int cudaMockEventReached(cudaEvent_t event) {
    return event != nullptr && event->event->done() ? 1 : 0;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind,
                            cudaStream_t stream) {
    if (count > 0 && (dst == nullptr || src == nullptr)) return fail(cudaErrorInvalidValue);
    if (count > 0) queue_of(stream).copy(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t size) {
    *ptr = std::calloc(1, size > 0 ? size : 1);
    if (*ptr == nullptr) return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(blocks_mutex);
    device_blocks[static_cast<const char *>(*ptr)] = size > 0 ? size : 1;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
    {
        std::lock_guard<std::mutex> lock(blocks_mutex);
        device_blocks.erase(static_cast<const char *>(ptr));
    }
    std::free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
    *ptr = std::malloc(size > 0 ? size : 1);
    return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *ptr) {
    std::free(ptr);
    return cudaSuccess;
}

// Device memory: any byte of a block cudaMalloc returned; everything else is memory the
// runtime never saw (CUDA 11 and later answer cudaMemoryTypeUnregistered).
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attrs, const void *ptr) {
    if (attrs == nullptr) return fail(cudaErrorInvalidValue);
    std::memset(attrs, 0, sizeof(*attrs));
    attrs->type = cudaMemoryTypeUnregistered;
    attrs->device = -1;
    std::lock_guard<std::mutex> lock(blocks_mutex);
    const char *p = static_cast<const char *>(ptr);
    auto it = device_blocks.upper_bound(p);
    if (it != device_blocks.begin() && p < std::prev(it)->first + std::prev(it)->second) {
        attrs->type = cudaMemoryTypeDevice;
        attrs->device = current_device;
        attrs->devicePointer = const_cast<void *>(ptr);
    }
    return cudaSuccess;
}

// A bus id per ordinal: ranks of one host on one ordinal are on one GPU.
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device) {
    if (device < 0 || device >= env_long("DISTTRAIN_MOCK_CUDA_DEVICES", 1)) {
        return fail(cudaErrorInvalidDevice);
    }
    std::snprintf(bus, static_cast<size_t>(len), "0000:%02x:00.0", device + 1);
    return cudaSuccess;
}

} // extern "C"

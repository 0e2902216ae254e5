// SPDX-License-Identifier: Apache-2.0
// A test-only stand-in for the CUDA runtime (libcudart-mock.so), loaded by the nccl
// transport through DISTTRAIN_CUDA_RUNTIME_LIBRARY. It exports just the functions the
// plugin resolves. Its "device memory" is host memory and its stream does nothing: work
// is done by the mock NCCL when it is called.
//
//   DISTTRAIN_MOCK_CUDA_DEVICES=N       cudaGetDeviceCount's answer (default 1); 0 fails
//                                       it with cudaErrorNoDevice, as a machine without
//                                       a GPU would
//   DISTTRAIN_MOCK_CUDA_EVENT_POLLS=K   cudaEventQuery answers cudaErrorNotReady K times
//                                       per event before cudaSuccess (default 1);
//                                       "never": the event never completes
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

struct CUevent_st {
    long polls_left;
};
struct CUstream_st {
    int unused;
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

const char *cudaGetErrorName(cudaError_t rc) {
    switch (rc) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
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
    default: return "unknown error (mock)";
    }
}

cudaError_t cudaGetLastError(void) {
    cudaError_t rc = last_error;
    last_error = cudaSuccess;
    return rc;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int) {
    *stream = new CUstream_st{0};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
    *event = new CUevent_st{0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    event->polls_left = env_long("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", 1);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    if (event->polls_left < 0) return cudaErrorNotReady; // "never"
    if (event->polls_left > 0) {
        --event->polls_left;
        return cudaErrorNotReady;
    }
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t size) {
    *ptr = std::calloc(1, size > 0 ? size : 1);
    return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

// A bus id per ordinal: ranks of one host on one ordinal are on one GPU.
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device) {
    if (device < 0 || device >= env_long("DISTTRAIN_MOCK_CUDA_DEVICES", 1)) {
        return fail(cudaErrorInvalidDevice);
    }
    std::snprintf(bus, static_cast<size_t>(len), "0000:%02x:00.0", device + 1);
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
    std::free(ptr);
    return cudaSuccess;
}

} // extern "C"

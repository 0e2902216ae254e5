// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime of the cuDNN plugin built for the CPU: one "GPU" whose memory is host
// memory and whose streams run every call at once, in the order of the calls, as
// cuda_emu runs kernels. Only what the plugin calls is here (cudaGetLastError is
// cuda_emu's). Events hold the time they were recorded at, so the plugin's profile works.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace {

// A handle for each kind of object, distinct from null.
struct Stream {};
struct Pool {};
struct Event {
    std::chrono::steady_clock::time_point at{};
    bool recorded = false;
};

constexpr size_t kAlignment = 256; // as cudaMalloc's

void *allocate(size_t bytes)
{
    return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment +
                                              kAlignment);
}

} // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

// A Hopper-class device of 4 multiprocessors: bfloat16 and TF32 paths are taken, and the
// kernels' grids stay small enough to run here.
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (device != 0)
        return cudaErrorInvalidDevice;
    *prop = cudaDeviceProp{};
    std::strncpy(prop->name, "cuda_emu (CPU)", sizeof prop->name - 1);
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 4;
    prop->totalGlobalMem = size_t(1) << 32;
    prop->maxThreadsPerBlock = 1024;
    prop->warpSize = 32;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "an error of the CPU's CUDA runtime";
    }
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = allocate(bytes);
    return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p)
{
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const cudaMemPoolProps *)
{
    *pool = reinterpret_cast<cudaMemPool_t>(new Pool());
    return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    delete reinterpret_cast<Pool *>(pool);
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void *) { return cudaSuccess; }
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t) { return cudaSuccess; }

cudaError_t cudaMallocFromPoolAsync(void **p, size_t bytes, cudaMemPool_t pool, cudaStream_t)
{
    if (pool == nullptr)
        return cudaErrorInvalidValue;
    return cudaMalloc(p, bytes);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t) { return cudaFree(p); }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t)
{
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t)
{
    std::memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int)
{
    *stream = reinterpret_cast<cudaStream_t>(new Stream());
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    delete reinterpret_cast<Stream *>(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = reinterpret_cast<cudaEvent_t>(new Event());
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    delete reinterpret_cast<Event *>(event);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t)
{
    auto *e = reinterpret_cast<Event *>(event);
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    const auto *a = reinterpret_cast<Event *>(start), *b = reinterpret_cast<Event *>(end);
    if (!a->recorded || !b->recorded)
        return cudaErrorInvalidResourceHandle;
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}

} // extern "C"

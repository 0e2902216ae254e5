// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime of the cuDNN plugin built for the CPU, as libcudart.so.13 with the
// real one's version node, so that the cuda memory provider (which links that soname)
// shares it when its folder comes first in LD_LIBRARY_PATH: one "GPU" whose memory is host
// memory and whose streams run every call at once, in the order of the calls, as
// cuda_emu (linked in, with its cudaGetLastError) runs kernels. Only what the two plugins
// call is here. Blocks from cudaMalloc are device memory and those from cudaMallocHost
// pinned host memory to cudaPointerGetAttributes; events hold the time they were recorded
// at, so the plugin's profile works, and are complete at once.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

// A handle for each kind of object, distinct from null.
struct Stream {};
struct Pool {};
struct Event {
    std::chrono::steady_clock::time_point at{};
    bool recorded = false;
};

constexpr size_t kAlignment = 256; // as cudaMalloc's

// Every live block: its start, size and kind, for cudaPointerGetAttributes.
struct Block {
    size_t bytes;
    cudaMemoryType type;
};
std::mutex g_blocks_lock;
std::map<const char *, Block> g_blocks;

void *allocate(size_t bytes, cudaMemoryType type)
{
    void *p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment +
                                                 kAlignment);
    if (p != nullptr) {
        const std::lock_guard<std::mutex> hold(g_blocks_lock);
        g_blocks[static_cast<const char *>(p)] = Block{bytes, type};
    }
    return p;
}

cudaError_t release(void *p)
{
    if (p == nullptr)
        return cudaSuccess;
    {
        const std::lock_guard<std::mutex> hold(g_blocks_lock);
        if (g_blocks.erase(static_cast<const char *>(p)) == 0)
            return cudaErrorInvalidValue;
    }
    std::free(p);
    return cudaSuccess;
}

} // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int)
{
    return cudaSetDevice(device);
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

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

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    default: return "cudaError (CPU runtime)";
    }
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = allocate(bytes, cudaMemoryTypeDevice);
    return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) { return release(p); }

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = allocate(bytes, cudaMemoryTypeHost);
    return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void *p) { return release(p); }

// Inside a block: its kind; anywhere else: memory this runtime never saw (CUDA 11 and
// later answer cudaMemoryTypeUnregistered with success).
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attrs, const void *ptr)
{
    *attrs = cudaPointerAttributes{};
    attrs->type = cudaMemoryTypeUnregistered;
    attrs->device = -1;
    const char *p = static_cast<const char *>(ptr);
    const std::lock_guard<std::mutex> hold(g_blocks_lock);
    auto it = g_blocks.upper_bound(p);
    if (it == g_blocks.begin())
        return cudaSuccess;
    --it;
    if (p < it->first + it->second.bytes) {
        attrs->type = it->second.type;
        attrs->device = 0;
        attrs->devicePointer = const_cast<char *>(p);
        attrs->hostPointer =
            it->second.type == cudaMemoryTypeHost ? const_cast<char *>(p) : nullptr;
    }
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

cudaError_t cudaStreamGetDevice(cudaStream_t, int *device)
{
    if (device == nullptr)
        return cudaErrorInvalidValue;
    *device = 0; // the one GPU
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int)
{
    *event = reinterpret_cast<cudaEvent_t>(new Event());
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }

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
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    const auto *a = reinterpret_cast<Event *>(start), *b = reinterpret_cast<Event *>(end);
    if (!a->recorded || !b->recorded)
        return cudaErrorInvalidResourceHandle;
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}

} // extern "C"

// SPDX-License-Identifier: Apache-2.0
// Device memory (cudaMalloc) and pinned host memory (cudaMallocHost) the core owns until
// it frees them. Each block is remembered so finalize can free what the core did not and
// a free of a foreign pointer is refused instead of corrupting the runtime's heap.
#include "cuda_instance.h"
#include "cuda_ops.h"

#include <string>

namespace cudamem {

int32_t device_alloc(void *m, int32_t device, size_t bytes, void **ptr)
{
    Instance *in = self(m);
    if (ptr == nullptr)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "device_alloc: ptr is NULL");
    *ptr = nullptr;
    if (device >= in->device_count)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "device_alloc: GPU " +
                    std::to_string(device) + " does not exist; this machine has " +
                    std::to_string(in->device_count));
    // cudaMalloc allocates on the current device: make it the asked one.
    cudaError_t rc = cudaSetDevice(device < 0 ? in->device : device);
    if (rc != cudaSuccess)
        return cuda_fail(in, "cudaSetDevice", rc);
    void *p = nullptr;
    rc = cudaMalloc(&p, bytes == 0 ? 1 : bytes); // a zero-byte block still has an address
    if (rc != cudaSuccess)
        return cuda_fail(in, ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), rc);
    add_owned(in, &Instance::device_blocks, p);
    *ptr = p;
    return DTP_OK;
}

int32_t device_free(void *m, void *ptr)
{
    Instance *in = self(m);
    if (!erase_owned(in, &Instance::device_blocks, ptr))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "device_free of a pointer device_alloc did not return");
    // cudaFree finds the block's device from the address; entering ours keeps the call
    // on a thread with a current context. It may wait for the device to go idle (CUDA's
    // rule, not ours); the core frees only after its copies on ptr completed.
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    cudaError_t rc = cudaFree(ptr);
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaFree", rc);
}

int32_t host_alloc(void *m, size_t bytes, void **ptr)
{
    Instance *in = self(m);
    if (ptr == nullptr)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "host_alloc: ptr is NULL");
    *ptr = nullptr;
    // Pinned memory is mapped for the current device's context (and every other under
    // unified addressing); entering ours keeps it out of GPU 0's context in every rank.
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    void *p = nullptr;
    cudaError_t rc = cudaMallocHost(&p, bytes == 0 ? 1 : bytes);
    if (rc != cudaSuccess)
        return cuda_fail(in, ("cudaMallocHost of " + std::to_string(bytes) + " bytes").c_str(),
                         rc);
    add_owned(in, &Instance::host_blocks, p);
    *ptr = p;
    return DTP_OK;
}

int32_t host_free(void *m, void *ptr)
{
    Instance *in = self(m);
    if (!erase_owned(in, &Instance::host_blocks, ptr))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "host_free of a pointer host_alloc did not return");
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    cudaError_t rc = cudaFreeHost(ptr);
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaFreeHost", rc);
}

} // namespace cudamem

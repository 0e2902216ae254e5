// SPDX-License-Identifier: Apache-2.0
// Where a pointer lives, as the CUDA runtime knows it. The core asks inside every
// collective call on the caller's thread, so this neither waits nor changes that
// thread's current device (cudaPointerGetAttributes needs none: addresses are unified).
#include "cuda_instance.h"
#include "cuda_ops.h"

#include <cstddef>
#include <cstring>

namespace cudamem {

int32_t pointer_query(void *m, const void *ptr, dt_memory_pointer_info_t *info)
{
    dt_memory_pointer_info_t mine{};
    mine.memory_type = DTP_MEMORY_HOST;
    mine.device = -1;

    cudaPointerAttributes attrs{};
    cudaError_t rc = cudaPointerGetAttributes(&attrs, ptr);
    if (rc == cudaSuccess) {
        // Managed memory counts as device memory: the device may touch it and the CPU
        // access would page-fault it over, so it is copied like device memory.
        // cudaMemoryTypeHost (pinned or registered) and Unregistered are host memory.
        if (attrs.type == cudaMemoryTypeDevice || attrs.type == cudaMemoryTypeManaged) {
            mine.memory_type = DTP_MEMORY_DEVICE;
            mine.device = attrs.device;
        }
    } else if (rc == cudaErrorInvalidValue) {
        // A pointer the runtime has never seen is host memory (the ABI's rule); runtimes
        // before CUDA 11 said so with this error, which the failed call left in the
        // thread's last-error slot: clear it so the user's next cudaGetLastError does
        // not see it.
        cudaGetLastError();
    } else {
        // Anything else (a faulted device, a lost driver) is not an answer: calling a
        // device pointer host memory would have the core read it with the CPU.
        return cuda_fail(self(m), "cudaPointerGetAttributes", rc);
    }

    // Write only the fields the core's struct has (it sets struct_size).
    const size_t size = info->struct_size < sizeof(mine) ? info->struct_size : sizeof(mine);
    const size_t head = offsetof(dt_memory_pointer_info_t, memory_type);
    if (size > head)
        std::memcpy(reinterpret_cast<char *>(info) + head,
                    reinterpret_cast<const char *>(&mine) + head, size - head);
    return DTP_OK;
}

} // namespace cudamem

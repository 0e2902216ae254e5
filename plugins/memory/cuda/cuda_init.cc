// SPDX-License-Identifier: Apache-2.0
// Opening the CUDA runtime for one context, choosing its device, and releasing what the
// core left behind at the end.
#include "cuda_instance.h"
#include "cuda_ops.h"
#include "device_ordinal.h"

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

namespace cudamem {
namespace {

// The device a context uses: DISTTRAIN_DEVICE when set (a GPU ordinal, for jobs that pin
// ranks to GPUs themselves), else local_rank modulo the device count, so the ranks of one
// host spread over its GPUs the way the cuDNN compute plugin spreads them.
int32_t choose_device(const Instance *in, int32_t local_rank, int *device)
{
    const char *value = std::getenv("DISTTRAIN_DEVICE");
    if (value == nullptr || *value == '\0') {
        *device = (local_rank > 0 ? local_rank : 0) % in->device_count;
        return DTP_OK;
    }
    int ordinal = -1;
    if (!dtp::parse_device_ordinal(value, &ordinal))
        return fail(in, DTP_ERR_INVALID_CONFIG, std::string("DISTTRAIN_DEVICE='") + value +
                    "' is not a GPU ordinal: write the GPU's number in digits only (0, 1, "
                    "...), or unset it for the local rank modulo the GPU count");
    if (ordinal >= in->device_count)
        return fail(in, DTP_ERR_INVALID_CONFIG, std::string("DISTTRAIN_DEVICE='") + value +
                    "', but this machine has " + std::to_string(in->device_count) +
                    " GPU(s), numbered from 0");
    *device = ordinal;
    return DTP_OK;
}

} // namespace

int32_t init(const dt_memory_init_args_t *args, void **m)
{
    if (args == nullptr || m == nullptr ||
        args->struct_size < offsetof(dt_memory_init_args_t, services) + sizeof(args->services))
        return DTP_ERR_INVALID_ARGUMENT;
    auto in = std::make_unique<Instance>();
    in->host = args->host;
    in->services = args->services;

    // The question a machine without a GPU or driver answers with an error (35, the
    // driver is too old or absent; 100, no device): that is "this provider cannot run
    // here", not a fault.
    cudaError_t rc = cudaGetDeviceCount(&in->device_count);
    if (rc != cudaSuccess || in->device_count <= 0) {
        if (rc != cudaSuccess)
            cudaGetLastError();
        return fail(in.get(), DTP_ERR_UNSUPPORTED,
                    std::string("no GPU: cudaGetDeviceCount ") +
                        (rc != cudaSuccess ? "failed: " + describe(rc)
                                           : std::string("found no CUDA device")) +
                        "; the cuda memory provider needs an NVIDIA GPU and its driver "
                        "(unset DISTTRAIN_MEMORY on a machine without one)");
    }
    int32_t status = choose_device(in.get(), args->local_rank, &in->device);
    if (status != DTP_OK)
        return status;

    // Start the driver and the device's primary context now (init may block; the other
    // members should not), without making the device current on the caller's thread,
    // which is the user's and may be working on another GPU.
    rc = cudaInitDevice(in->device, 0, 0);
    if (rc != cudaSuccess)
        return cuda_fail(in.get(), "cudaInitDevice", rc);
    *m = in.release();
    return DTP_OK;
}

int32_t finalize(void *m)
{
    std::unique_ptr<Instance> in(self(m));
    if (in == nullptr)
        return DTP_OK;
    // Called on the user's thread (dt_context_destroy): its current device is put back.
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess)
        previous = -1;
    int32_t first = enter(in.get());

    // Release all of it even when one call fails; report the first failure.
    auto note = [&](const char *call, cudaError_t rc) {
        if (rc != cudaSuccess && first == DTP_OK)
            first = cuda_fail(in.get(), call, rc);
    };
    for (void *e : in->events)
        note("cudaEventDestroy", cudaEventDestroy(static_cast<cudaEvent_t>(e)));
    for (void *s : in->streams)
        note("cudaStreamDestroy", cudaStreamDestroy(static_cast<cudaStream_t>(s)));
    for (void *p : in->device_blocks)
        note("cudaFree", cudaFree(p));
    for (void *p : in->host_blocks)
        note("cudaFreeHost", cudaFreeHost(p));

    if (previous >= 0 && previous != in->device)
        cudaSetDevice(previous);
    return first;
}

} // namespace cudamem

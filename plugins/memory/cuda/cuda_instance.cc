// SPDX-License-Identifier: Apache-2.0
// Error reporting and device selection shared by every member of the table.
#include "cuda_instance.h"

namespace cudamem {

int32_t fail(const Instance *in, int32_t status, const std::string &why)
{
    if (in != nullptr && in->services != nullptr && in->services->set_error != nullptr)
        in->services->set_error(in->host, ("cuda memory: " + why).c_str());
    return status;
}

std::string describe(cudaError_t rc)
{
    return std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
}

namespace {

// The DTP_ status the core should see for a CUDA failure.
int32_t status_of(cudaError_t rc)
{
    switch (rc) {
    case cudaErrorMemoryAllocation:
        return DTP_ERR_NO_MEMORY;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidMemcpyDirection:
        return DTP_ERR_INVALID_ARGUMENT;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
        return DTP_ERR_UNSUPPORTED;
    default:
        return DTP_ERR_INTERNAL; // a faulted device, a driver failure
    }
}

} // namespace

int32_t cuda_fail(const Instance *in, const char *call, cudaError_t rc)
{
    // Non-sticky errors stay in the runtime's last-error slot until read; ours are
    // reported here, so they must not surface from the user's next cudaGetLastError.
    cudaGetLastError();
    return fail(in, status_of(rc), std::string(call) + " failed: " + describe(rc));
}

int32_t enter(const Instance *in)
{
    cudaError_t rc = cudaSetDevice(in->device);
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaSetDevice", rc);
}

void add_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p)
{
    std::lock_guard<std::mutex> lock(in->mutex);
    (in->*set).insert(p);
}

bool erase_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p)
{
    std::lock_guard<std::mutex> lock(in->mutex);
    return (in->*set).erase(p) == 1;
}

bool is_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p)
{
    std::lock_guard<std::mutex> lock(in->mutex);
    return (in->*set).count(p) == 1;
}

} // namespace cudamem

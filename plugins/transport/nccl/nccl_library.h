/* SPDX-License-Identifier: Apache-2.0 */
// NCCL and the CUDA runtime, opened with dlopen at init (the plugin links neither, so it
// loads on a machine without them and declines with a reason instead). The headers give
// only the types and constants; every function the plugin calls is a member of these
// tables, resolved by name.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace dt::nccl {

struct CudaApi {
    decltype(&::cudaGetDeviceCount) GetDeviceCount = nullptr;
    decltype(&::cudaGetDevice) GetDevice = nullptr;
    decltype(&::cudaSetDevice) SetDevice = nullptr;
    decltype(&::cudaGetErrorName) GetErrorName = nullptr;
    decltype(&::cudaGetErrorString) GetErrorString = nullptr;
    decltype(&::cudaGetLastError) GetLastError = nullptr;
    decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
    decltype(&::cudaStreamDestroy) StreamDestroy = nullptr;
    decltype(&::cudaEventCreateWithFlags) EventCreateWithFlags = nullptr;
    decltype(&::cudaEventDestroy) EventDestroy = nullptr;
    decltype(&::cudaEventRecord) EventRecord = nullptr;
    decltype(&::cudaEventQuery) EventQuery = nullptr;
    decltype(&::cudaStreamWaitEvent) StreamWaitEvent = nullptr;
    cudaError_t (*Malloc)(void **, size_t) = nullptr; // cudaMalloc has C++ overloads
    decltype(&::cudaFree) Free = nullptr;
    // Optional: names the GPU for DISTTRAIN_DEVICE_TRANSPORT=auto's "a GPU of its own".
    decltype(&::cudaDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
    // Optional (CUDA 12.8 and later): the GPU of a caller's stream; without it a stream
    // named by launch_on_stream is taken to be of the communicator's GPU.
    decltype(&::cudaStreamGetDevice) StreamGetDevice = nullptr;

    // "cudaErrorInsufficientDriver: CUDA driver version is insufficient for ..."
    std::string describe(cudaError_t rc) const;
};

struct NcclApi {
    decltype(&::ncclGetVersion) GetVersion = nullptr;
    decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
    decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
    decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
    decltype(&::ncclCommFinalize) CommFinalize = nullptr;
    decltype(&::ncclCommDestroy) CommDestroy = nullptr;
    decltype(&::ncclCommAbort) CommAbort = nullptr;
    decltype(&::ncclGetErrorString) GetErrorString = nullptr;
    decltype(&::ncclGetLastError) GetLastError = nullptr;
    decltype(&::ncclAllReduce) AllReduce = nullptr;
    decltype(&::ncclBroadcast) Broadcast = nullptr;
    decltype(&::ncclAllGather) AllGather = nullptr;
    decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
    decltype(&::ncclSend) Send = nullptr;
    decltype(&::ncclRecv) Recv = nullptr;
    decltype(&::ncclGroupStart) GroupStart = nullptr;
    decltype(&::ncclGroupEnd) GroupEnd = nullptr;
    // Optional: NCCL before 2.18 has none, and groups are then staged.
    decltype(&::ncclCommSplit) CommSplit = nullptr;

    // "ncclRemoteError: remote process exited or there was a network error (<the
    // communicator's last error>)"; comm may be null.
    std::string describe(ncclResult_t rc, ncclComm_t comm) const;
};

// Both libraries of one transport instance. The handles are never closed: NCCL and the
// CUDA runtime register process-wide state (atexit handlers, threads) that unloading
// would leave dangling, and dlopen counts references, so a second instance reuses them.
struct Libraries {
    CudaApi cuda;
    NcclApi nccl;
    std::string cuda_path;
    std::string nccl_path;

    // Opens DISTTRAIN_CUDA_RUNTIME_LIBRARY (default libcudart.so.13), then
    // DISTTRAIN_NCCL_LIBRARY (default libnccl.so.2), and resolves every function. Returns
    // "" on success, else why not, naming the library and dlerror().
    std::string open();
};

} // namespace dt::nccl

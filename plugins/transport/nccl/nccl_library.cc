// SPDX-License-Identifier: Apache-2.0
// dlopen of the CUDA runtime and NCCL, and their error texts.
#include "nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace dt::nccl {
namespace {

const char *env_or(const char *name, const char *fallback) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

// Resolves each named symbol into its member; returns "" or what is missing.
class Resolver {
public:
    Resolver(void *handle, const std::string &path) : handle_(handle), path_(path) {}
    template <typename Fn>
    void operator()(Fn &member, const char *name) {
        if (!missing_.empty()) return;
        dlerror();
        void *sym = dlsym(handle_, name);
        if (sym == nullptr) {
            const char *err = dlerror();
            missing_ = "'" + path_ + "' has no " + name + " (" +
                       (err != nullptr ? err : "no such symbol") + ")";
            return;
        }
        member = reinterpret_cast<Fn>(sym);
    }
    const std::string &missing() const { return missing_; }

private:
    void *handle_;
    std::string path_;
    std::string missing_;
};

void *load(const std::string &path, const char *what, const char *variable, std::string *why) {
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *err = dlerror();
        *why = std::string("cannot load ") + what + " '" + path + "': " +
               (err != nullptr ? err : "unknown dlopen error") + " (set " + variable +
               " to its path)";
    }
    return h;
}

} // namespace

std::string CudaApi::describe(cudaError_t rc) const {
    std::string out = GetErrorName ? GetErrorName(rc) : "cudaError";
    out += " (" + std::to_string(static_cast<int>(rc)) + ")";
    if (GetErrorString) out += std::string(": ") + GetErrorString(rc);
    return out;
}

std::string NcclApi::describe(ncclResult_t rc, ncclComm_t comm) const {
    std::string out = GetErrorString ? GetErrorString(rc) : "NCCL error";
    out += " (" + std::to_string(static_cast<int>(rc)) + ")";
    const char *last = GetLastError ? GetLastError(comm) : nullptr;
    if (last != nullptr && *last != '\0') out += ": " + std::string(last);
    return out;
}

std::string Libraries::open() {
    std::string why;
    cuda_path = env_or("DISTTRAIN_CUDA_RUNTIME_LIBRARY", "libcudart.so.13");
    void *c = load(cuda_path, "the CUDA runtime", "DISTTRAIN_CUDA_RUNTIME_LIBRARY", &why);
    if (c == nullptr) return why;
    Resolver rc(c, cuda_path);
    rc(cuda.GetDeviceCount, "cudaGetDeviceCount");
    rc(cuda.GetDevice, "cudaGetDevice");
    rc(cuda.SetDevice, "cudaSetDevice");
    rc(cuda.GetErrorName, "cudaGetErrorName");
    rc(cuda.GetErrorString, "cudaGetErrorString");
    rc(cuda.GetLastError, "cudaGetLastError");
    rc(cuda.StreamCreateWithFlags, "cudaStreamCreateWithFlags");
    rc(cuda.StreamDestroy, "cudaStreamDestroy");
    rc(cuda.EventCreateWithFlags, "cudaEventCreateWithFlags");
    rc(cuda.EventDestroy, "cudaEventDestroy");
    rc(cuda.EventRecord, "cudaEventRecord");
    rc(cuda.EventQuery, "cudaEventQuery");
    rc(cuda.StreamWaitEvent, "cudaStreamWaitEvent");
    rc(cuda.Malloc, "cudaMalloc");
    rc(cuda.Free, "cudaFree");
    if (!rc.missing().empty()) return "the CUDA runtime " + rc.missing();
    cuda.DeviceGetPCIBusId = reinterpret_cast<decltype(cuda.DeviceGetPCIBusId)>(
        dlsym(c, "cudaDeviceGetPCIBusId"));
    cuda.StreamGetDevice = reinterpret_cast<decltype(cuda.StreamGetDevice)>(
        dlsym(c, "cudaStreamGetDevice"));

    nccl_path = env_or("DISTTRAIN_NCCL_LIBRARY", "libnccl.so.2");
    void *n = load(nccl_path, "NCCL", "DISTTRAIN_NCCL_LIBRARY", &why);
    if (n == nullptr) return why;
    Resolver rn(n, nccl_path);
    rn(nccl.GetVersion, "ncclGetVersion");
    rn(nccl.GetUniqueId, "ncclGetUniqueId");
    rn(nccl.CommInitRankConfig, "ncclCommInitRankConfig");
    rn(nccl.CommGetAsyncError, "ncclCommGetAsyncError");
    rn(nccl.CommFinalize, "ncclCommFinalize");
    rn(nccl.CommDestroy, "ncclCommDestroy");
    rn(nccl.CommAbort, "ncclCommAbort");
    rn(nccl.GetErrorString, "ncclGetErrorString");
    rn(nccl.GetLastError, "ncclGetLastError");
    rn(nccl.AllReduce, "ncclAllReduce");
    rn(nccl.Broadcast, "ncclBroadcast");
    rn(nccl.AllGather, "ncclAllGather");
    rn(nccl.ReduceScatter, "ncclReduceScatter");
    rn(nccl.Send, "ncclSend");
    rn(nccl.Recv, "ncclRecv");
    rn(nccl.GroupStart, "ncclGroupStart");
    rn(nccl.GroupEnd, "ncclGroupEnd");
    if (!rn.missing().empty()) return "NCCL " + rn.missing();
    nccl.CommSplit = reinterpret_cast<decltype(nccl.CommSplit)>(dlsym(n, "ncclCommSplit"));
    return "";
}

} // namespace dt::nccl

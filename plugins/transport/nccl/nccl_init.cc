// SPDX-License-Identifier: Apache-2.0
// init: the vote on whether every rank can run NCCL, the device, rank 0's unique id and
// the non-blocking communicator, each bounded by the init arguments' timeout.
#include "nccl_context.h"

#include "device_ordinal.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <unistd.h>

namespace dt::nccl {
namespace {

constexpr const char *kVerdictOk = "ok";

// A verdict travels as "<DTP status> <reason>", or "ok" (with DISTTRAIN_DEVICE_TRANSPORT
// =auto: "ok <host> <GPU's PCI bus id>").
std::string verdict(int32_t status, const std::string &why) {
    return std::to_string(status) + " " + why;
}

bool is_ok(const std::string &v) { return v == kVerdictOk || v.rfind("ok ", 0) == 0; }

// DISTTRAIN_DEVICE_TRANSPORT=auto takes NCCL only where every rank has a GPU of its own.
bool auto_mode() {
    const char *v = std::getenv("DISTTRAIN_DEVICE_TRANSPORT");
    return v != nullptr && std::strcmp(v, "auto") == 0;
}

std::string host_name() {
    char name[256] = {0};
    if (gethostname(name, sizeof(name) - 1) != 0) return "?";
    return name;
}

} // namespace

Context::OnDevice::OnDevice(const Context &c) : cuda_(c.lib_.cuda) {
    if (cuda_.GetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != c.device_) cuda_.SetDevice(c.device_);
    else previous_ = -1;
}

Context::OnDevice::~OnDevice() {
    if (previous_ >= 0) cuda_.SetDevice(previous_);
}

int32_t Context::remaining_ms() const {
    if (timeout_ms_ <= 0) return -1; // the context's own timeout, for the store
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now()).count();
    return static_cast<int32_t>(left > 0 ? left : 0);
}

// Whether this rank can run NCCL: DISTTRAIN_NCCL_HOST_WAIT is 0 or 1 (if set), both
// libraries load, CUDA sees a GPU, and DISTTRAIN_DEVICE (if set) names one. "ok" or a verdict with its reason.
std::string Context::local_verdict(const dt_transport_init_args_t &args) {
    std::string why = read_host_wait();
    if (!why.empty()) return verdict(DTP_ERR_INVALID_CONFIG, why);
    why = lib_.open();
    if (!why.empty()) return verdict(DTP_ERR_UNSUPPORTED, why);
    int count = 0;
    cudaError_t rc = lib_.cuda.GetDeviceCount(&count);
    if (rc != cudaSuccess) {
        lib_.cuda.GetLastError(); // clear it: it is an answer, not a fault
        return verdict(DTP_ERR_UNSUPPORTED,
                       "no GPU: cudaGetDeviceCount failed: " + lib_.cuda.describe(rc));
    }
    if (count <= 0) {
        return verdict(DTP_ERR_UNSUPPORTED, "no GPU: cudaGetDeviceCount found no CUDA device");
    }
    const char *value = std::getenv("DISTTRAIN_DEVICE");
    if (value == nullptr || *value == '\0') {
        device_ = (args.local_rank > 0 ? args.local_rank : 0) % count;
        return gpu_verdict();
    }
    int ordinal = -1;
    if (!dtp::parse_device_ordinal(value, &ordinal)) {
        return verdict(DTP_ERR_INVALID_CONFIG,
                       std::string("DISTTRAIN_DEVICE='") + value + "' is not a GPU ordinal: "
                       "write the GPU's number in digits only (0, 1, ...), or unset it for "
                       "the local rank modulo the GPU count");
    }
    if (ordinal >= count) {
        return verdict(DTP_ERR_INVALID_CONFIG,
                       std::string("DISTTRAIN_DEVICE='") + value + "' is not a GPU ordinal "
                       "of this machine, which has " + std::to_string(count) +
                       " GPU(s) numbered from 0");
    }
    device_ = ordinal;
    return gpu_verdict();
}

// "ok", or in auto mode "ok <host> <PCI bus id of the GPU>" (the ordinal where the runtime
// cannot say), so the vote can see two ranks of one host on one GPU.
std::string Context::gpu_verdict() {
    if (!auto_mode()) return kVerdictOk;
    std::string id = "ordinal-" + std::to_string(device_);
    char bus[64] = {0};
    if (lib_.cuda.DeviceGetPCIBusId != nullptr &&
        lib_.cuda.DeviceGetPCIBusId(bus, sizeof(bus) - 1, device_) == cudaSuccess) {
        id = bus;
    } else {
        lib_.cuda.GetLastError();
    }
    return std::string(kVerdictOk) + " " + host_name() + " " + id;
}

// Every rank puts its verdict and reads all of them, so that either every rank goes on or
// every rank declines with the same message (built from the store in rank order).
void Context::vote(const std::string &mine) {
    std::string failures;
    int32_t status = DTP_OK;
    std::map<std::string, int> gpus; // auto mode: "<host> <bus id>" -> the first rank on it
    std::string shared;              // ... and the first two ranks found on one GPU
    auto note = [&](int r, const std::string &v) {
        if (v.rfind("ok ", 0) == 0) {
            auto [it, fresh] = gpus.emplace(v.substr(3), r);
            if (!fresh && shared.empty())
                shared = "ranks " + std::to_string(it->second) + " and " + std::to_string(r) +
                         " would share the GPU " + v.substr(3);
            return;
        }
        if (is_ok(v)) return;
        char *end = nullptr;
        long s = std::strtol(v.c_str(), &end, 10);
        if (status == DTP_OK) status = s < 0 ? static_cast<int32_t>(s) : DTP_ERR_UNSUPPORTED;
        std::string reason = end != nullptr && *end == ' ' ? std::string(end + 1) : v;
        failures += (failures.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": ") +
                    reason;
    };
    if (size_ == 1) {
        note(0, mine);
    } else {
        host_.put("nccl/verdict/" + std::to_string(rank_), mine);
        for (int r = 0; r < size_; ++r) {
            std::string v = r == rank_ ? mine
                                       : host_.get("nccl/verdict/" + std::to_string(r),
                                                   remaining_ms(),
                                                   "rank " + std::to_string(r) +
                                                       "'s verdict on running NCCL");
            note(r, v);
        }
    }
    if (status == DTP_OK && !shared.empty()) {
        throw NcclError(DTP_ERR_UNSUPPORTED, "nccl: declined on every rank, since " + shared +
                        ": DISTTRAIN_DEVICE_TRANSPORT=auto takes NCCL only where every rank "
                        "has a GPU of its own (DISTTRAIN_DEVICE_TRANSPORT=nccl shares one "
                        "where the installed NCCL allows it)");
    }
    if (status != DTP_OK) {
        throw NcclError(status, std::string("nccl: declined") +
                        (size_ > 1 ? " on every rank, since not every rank can run NCCL"
                                   : "") +
                        " (" + failures + "); the nccl transport needs an NVIDIA GPU, its "
                        "driver, the CUDA runtime and NCCL on every rank");
    }
}

ncclUniqueId Context::share_unique_id() {
    ncclUniqueId id{};
    if (rank_ == 0) {
        ncclResult_t rc = lib_.nccl.GetUniqueId(&id);
        if (rc != ncclSuccess) {
            std::string why = "nccl: ncclGetUniqueId failed: " + lib_.nccl.describe(rc, nullptr);
            // The other ranks wait for the id: tell them why it will not come.
            host_.put("nccl/unique-id", "!" + why);
            throw NcclError(DTP_ERR_TRANSPORT, why);
        }
        if (size_ > 1) host_.put("nccl/unique-id", std::string(id.internal, sizeof(id.internal)));
        return id;
    }
    std::string v = host_.get("nccl/unique-id", remaining_ms(), "rank 0's NCCL unique id");
    if (!v.empty() && v[0] == '!') {
        throw NcclError(DTP_ERR_TRANSPORT, "nccl: rank 0 could not create the NCCL unique "
                        "id: " + v.substr(1));
    }
    if (v.size() != sizeof(id.internal)) {
        throw NcclError(DTP_ERR_PROTOCOL, "nccl: rank 0's NCCL unique id has " +
                        std::to_string(v.size()) + " bytes, not " +
                        std::to_string(sizeof(id.internal)));
    }
    std::memcpy(id.internal, v.data(), sizeof(id.internal));
    return id;
}

// ncclCommInitRankConfig on a non-blocking communicator, polled until NCCL is done or
// the deadline passes; a communicator that did not come up is aborted, never leaked.
void Context::create_comm(const ncclUniqueId &id) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "disttrain";
    OnDevice on(*this);
    ncclResult_t rc = lib_.nccl.CommInitRankConfig(&comm_, size_, id, rank_, &config);
    ncclResult_t state = rc;
    while (rc == ncclSuccess || rc == ncclInProgress) {
        if (comm_ == nullptr) break;
        rc = lib_.nccl.CommGetAsyncError(comm_, &state);
        if (rc != ncclSuccess || state != ncclInProgress) break;
        if (timeout_ms_ > 0 && std::chrono::steady_clock::now() >= deadline_) {
            release_comm(true);
            throw NcclError(DTP_ERR_TIMEOUT,
                            "nccl: the communicator (rank " + std::to_string(rank_) + " of " +
                            std::to_string(size_) + ", GPU " + std::to_string(device_) +
                            ") did not come up within the init timeout of " +
                            std::to_string(timeout_ms_) + " ms; ncclCommAbort was called. "
                            "Are all ranks running, and can they reach each other?");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ncclResult_t failure = rc != ncclSuccess ? rc : state;
    if (failure == ncclSuccess && comm_ != nullptr) return;
    std::string why = lib_.nccl.describe(failure, comm_);
    release_comm(true);
    std::string hint;
    if (why.find("Duplicate GPU") != std::string::npos) {
        hint = "; two ranks share one GPU, which NCCL up to 2.29 refuses (2.30 allows it "
               "with NCCL_MULTI_RANK_GPU_ENABLE=1): run one rank per GPU, or pin each rank "
               "to its own GPU with DISTTRAIN_DEVICE";
    }
    throw NcclError(DTP_ERR_TRANSPORT, "nccl: creating the communicator (rank " +
                    std::to_string(rank_) + " of " + std::to_string(size_) + ", GPU " +
                    std::to_string(device_) + ") failed: " + why + hint);
}

Context::Context(const dt_transport_init_args_t &args)
    : host_(args.host, args.services), rank_(args.rank), size_(args.size),
      timeout_ms_(args.timeout_ms),
      deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(
                    args.timeout_ms > 0 ? args.timeout_ms : 0)) {
    vote(local_verdict(args));
    {
        OnDevice on(*this);
        cudaError_t rc = lib_.cuda.StreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        if (rc != cudaSuccess) {
            throw NcclError(DTP_ERR_TRANSPORT, "nccl: cudaStreamCreateWithFlags on GPU " +
                            std::to_string(device_) + " failed: " + lib_.cuda.describe(rc));
        }
        void *p = nullptr;
        rc = lib_.cuda.Malloc(&p, sizeof(float));
        if (rc != cudaSuccess) {
            lib_.cuda.StreamDestroy(stream_);
            throw NcclError(DTP_ERR_NO_MEMORY, "nccl: cudaMalloc of the barrier's scratch "
                            "element failed: " + lib_.cuda.describe(rc));
        }
        scratch_ = static_cast<float *>(p);
    }
    try {
        create_comm(share_unique_id());
    } catch (...) {
        OnDevice on(*this);
        lib_.cuda.Free(scratch_);
        lib_.cuda.StreamDestroy(stream_);
        throw;
    }
    int version = 0;
    lib_.nccl.GetVersion(&version);
    host_.log(DT_LOG_INFO, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
              " on GPU " + std::to_string(device_) + " with NCCL " + std::to_string(version) +
              " (" + lib_.nccl_path + ")");
}

} // namespace dt::nccl

// SPDX-License-Identifier: Apache-2.0
// A test-only stand-in for NCCL (libnccl-mock.so), loaded by the nccl transport through
// DISTTRAIN_NCCL_LIBRARY. It exports just the functions the plugin resolves. With one
// rank its collectives really compute, on host memory (the mock CUDA runtime's "device
// memory"), when they are called; with more ranks they move nothing (each rank is a
// separate process) and only init and failures are simulated.
//
//   DISTTRAIN_MOCK_NCCL_INIT=ok|stuck|fail|duplicate
//       ok (default): ncclCommInitRankConfig answers ncclInProgress and the second
//       ncclCommGetAsyncError poll ncclSuccess; stuck: ncclInProgress forever; fail:
//       ncclInvalidUsage; duplicate: ncclInvalidUsage with NCCL's "Duplicate GPU
//       detected" message
//   DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER=N
//       once N collectives were called on a communicator, ncclCommGetAsyncError answers
//       ncclRemoteError
//   DISTTRAIN_MOCK_NCCL_ENQUEUE=async|sync
//       async (default): a collective or group answers ncclInProgress and the next
//       ncclCommGetAsyncError poll ncclInProgress once more, as a non-blocking
//       communicator may; sync: ncclSuccess at once
//   DISTTRAIN_MOCK_NCCL_LOG=path
//       appends one line per lifecycle call (ncclCommInitRankConfig, ncclCommFinalize,
//       ncclCommDestroy, ncclCommAbort), so a test can count them
#include "../fakedevice/fakedevice_arena.h"

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct ncclComm {
    int nranks = 1;
    int rank = 0;
    int init_polls = 0;
    bool initialised = false;
    bool enqueueing = false;
    long calls = 0;
    std::string last_error;
};

namespace {

std::string env(const char *name, const char *fallback) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

void log_call(const char *what) {
    std::string path = env("DISTTRAIN_MOCK_NCCL_LOG", "");
    if (path.empty()) return;
    if (FILE *f = std::fopen(path.c_str(), "a")) {
        std::fprintf(f, "%s\n", what);
        std::fclose(f);
    }
}

size_t size_of(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

// A collective was called: one-rank data movement already done by the caller.
ncclResult_t issued(ncclComm_t comm) {
    ++comm->calls;
    if (env("DISTTRAIN_MOCK_NCCL_ENQUEUE", "async") == "sync") return ncclSuccess;
    comm->enqueueing = true;
    return ncclInProgress;
}

// Memory of the fake device (tests/plugins/fakedevice), which the CPU cannot touch, is
// moved through its shadow, as a GPU's copy engine would; other memory is used as is.
void *reachable(const void *p) {
    static fakedevice::Arena &arena = fakedevice::acquire_arena(); // kept for the process
    return arena.contains(p) ? arena.shadow(p) : const_cast<void *>(p);
}

void copy(void *dst, const void *src, size_t bytes) {
    if (dst != src && bytes > 0) std::memmove(reachable(dst), reachable(src), bytes);
}

struct P2p {
    ncclComm_t comm;
    void *buf;
    size_t bytes;
    int peer;
};
thread_local int group_depth = 0;
thread_local std::vector<P2p> group_sends;
thread_local std::vector<P2p> group_recvs;

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    for (size_t i = 0; i < sizeof(id->internal); ++i) id->internal[i] = static_cast<char>(i * 7 + 1);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId,
                                    int rank, ncclConfig_t *config) {
    log_call("ncclCommInitRankConfig");
    if (config == nullptr || config->blocking != 0) return ncclInvalidArgument;
    *comm = new ncclComm();
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
    return ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    if (comm == nullptr) return ncclInvalidArgument;
    if (!comm->initialised) {
        std::string mode = env("DISTTRAIN_MOCK_NCCL_INIT", "ok");
        if (mode == "stuck" || ++comm->init_polls < 2) {
            *state = ncclInProgress;
        } else if (mode == "fail") {
            comm->last_error = "mock: communicator set-up failed (DISTTRAIN_MOCK_NCCL_INIT=fail)";
            *state = ncclInvalidUsage;
        } else if (mode == "duplicate") {
            comm->last_error = "Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
                               "device 1000";
            *state = ncclInvalidUsage;
        } else {
            comm->initialised = true;
            *state = ncclSuccess;
        }
        return ncclSuccess;
    }
    long after = std::strtol(env("DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER", "-1").c_str(),
                             nullptr, 10);
    if (after >= 0 && comm->calls >= after) {
        comm->last_error = "mock: a remote rank exited (DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER)";
        *state = ncclRemoteError;
        return ncclSuccess;
    }
    if (comm->enqueueing) {
        comm->enqueueing = false;
        *state = ncclInProgress; // still enqueueing on this poll; done on the next
        return ncclSuccess;
    }
    *state = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    log_call("ncclCommFinalize");
    if (comm == nullptr) return ncclInvalidArgument;
    if (env("DISTTRAIN_MOCK_NCCL_ENQUEUE", "async") == "sync") return ncclSuccess;
    comm->enqueueing = true;
    return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    log_call("ncclCommDestroy");
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    log_call("ncclCommAbort");
    delete comm;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t rc) {
    switch (rc) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (mock)";
    case ncclSystemError: return "unhandled system error (mock)";
    case ncclInternalError: return "internal error (mock)";
    case ncclInvalidArgument: return "invalid argument (mock)";
    case ncclInvalidUsage: return "invalid usage (mock)";
    case ncclRemoteError: return "remote process exited or there was a network error (mock)";
    case ncclInProgress: return "NCCL operation in progress (mock)";
    default: return "unknown result code (mock)";
    }
}

const char *ncclGetLastError(ncclComm_t comm) {
    return comm != nullptr ? comm->last_error.c_str() : "";
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t, ncclComm_t comm, cudaStream_t) {
    if (size_of(t) == 0) return ncclInvalidArgument;
    if (comm->nranks == 1) copy(recv, send, count * size_of(t)); // every operator: itself
    return issued(comm);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t,
                           int root, ncclComm_t comm, cudaStream_t) {
    if (size_of(t) == 0 || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
    if (comm->nranks == 1) copy(recv, send, count * size_of(t));
    return issued(comm);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t) {
    if (size_of(t) == 0) return ncclInvalidArgument;
    if (comm->nranks == 1) copy(recv, send, count * size_of(t));
    return issued(comm);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t,
                               ncclRedOp_t, ncclComm_t comm, cudaStream_t) {
    if (size_of(t) == 0) return ncclInvalidArgument;
    if (comm->nranks == 1) copy(recv, send, count * size_of(t));
    return issued(comm);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t) {
    if (group_depth == 0 || size_of(t) == 0 || peer < 0 || peer >= comm->nranks) {
        return ncclInvalidUsage; // the plugin always groups its sends
    }
    group_sends.push_back({comm, const_cast<void *>(send), count * size_of(t), peer});
    return ncclSuccess;
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t) {
    if (group_depth == 0 || size_of(t) == 0 || peer < 0 || peer >= comm->nranks) {
        return ncclInvalidUsage;
    }
    group_recvs.push_back({comm, recv, count * size_of(t), peer});
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
    ++group_depth;
    return ncclSuccess;
}

// One rank: each receive from rank 0 takes the next send to rank 0, in order.
ncclResult_t ncclGroupEnd(void) {
    if (group_depth == 0) return ncclInvalidUsage;
    if (--group_depth > 0) return ncclSuccess;
    ncclComm_t comm = !group_sends.empty() ? group_sends.front().comm
                                           : !group_recvs.empty() ? group_recvs.front().comm
                                                                  : nullptr;
    ncclResult_t rc = ncclSuccess;
    if (comm != nullptr && comm->nranks == 1) {
        if (group_sends.size() != group_recvs.size()) rc = ncclInvalidUsage;
        for (size_t i = 0; rc == ncclSuccess && i < group_sends.size(); ++i) {
            if (group_sends[i].bytes != group_recvs[i].bytes) rc = ncclInvalidUsage;
            else copy(group_recvs[i].buf, group_sends[i].buf, group_sends[i].bytes);
        }
    }
    group_sends.clear();
    group_recvs.clear();
    if (rc != ncclSuccess || comm == nullptr) return rc;
    return issued(comm);
}

} // extern "C"

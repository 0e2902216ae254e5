// SPDX-License-Identifier: Apache-2.0
// A test-only stand-in for NCCL (libnccl-mock.so), loaded by the nccl transport through
// DISTTRAIN_NCCL_LIBRARY. It exports just the functions the plugin resolves, and the
// blocking ncclCommInitRank of the raw-NCCL side of tests/bench/nccl_overhead.c. Its ranks
// are processes of one host: a communicator is a shared-memory object named by the
// unique id (mock_wire.h) and its collectives really compute, on host memory (the mock
// CUDA runtime's "device memory") or the fake device's memory (through its shadow). As a
// non-blocking communicator does, a collective answers ncclInProgress and moves its data
// while ncclCommGetAsyncError is polled, once every rank has called it; a rank that
// exited or aborted is ncclRemoteError on the others' next poll.
//
//   DISTTRAIN_MOCK_NCCL_INIT=ok|stuck|fail|duplicate
//       ok (default): ncclCommInitRankConfig answers ncclInProgress and a later
//       ncclCommGetAsyncError poll ncclSuccess, once every rank attached; stuck:
//       ncclInProgress forever; fail: ncclInvalidUsage; duplicate: ncclInvalidUsage with
//       NCCL's "Duplicate GPU detected" message
//   DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER=N
//       once N collectives were called on a communicator, ncclCommGetAsyncError answers
//       ncclRemoteError
//   DISTTRAIN_MOCK_NCCL_EXIT_AT=R:N
//       rank R of a communicator made by ncclCommInitRankConfig (not by a split) exits
//       (status 3, no clean-up) inside its N-th collective, before its data left: a rank
//       dying in the middle of an allreduce that the others already joined
//   DISTTRAIN_MOCK_NCCL_ENQUEUE=async|sync
//       async (default): a collective or group answers ncclInProgress and the polls after
//       it ncclInProgress until its data moved, at least once; sync: the call returns
//       ncclSuccess once its data moved (waiting up to 60 s for the peers)
//   DISTTRAIN_MOCK_NCCL_SLOT_BYTES=B
//       the most one rank contributes to one collective (default 64 MiB + 4 KiB)
//   Streams: where the CUDA runtime the plugin opened (DISTTRAIN_CUDA_RUNTIME_LIBRARY)
//       is the mock's, each collective records an event on the stream it was given when
//       it is enqueued, and its send buffer is read only once the stream has reached that
//       event: after whatever the stream was made to wait for (cudaStreamWaitEvent), as a
//       kernel queued on a GPU stream would. With another runtime, streams are ignored.
//   DISTTRAIN_MOCK_NCCL_LOG=path
//       appends one line per lifecycle call (ncclCommInitRankConfig, ncclCommSplit,
//       ncclCommFinalize, ncclCommDestroy, ncclCommAbort) and per group of collectives
//       ("ncclGroupEnd N"), so a test can count them
// Built a second time without ncclCommSplit (libnccl-mock-nosplit.so), as NCCL before
// 2.18 is.
#include "../fakedevice/fakedevice_arena.h"
#include "mock_reduce.h"
#include "mock_wire.h"

#include <nccl.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using ncclmock::size_of;
using ncclmock::Wire;

namespace {

struct P2p {
    void *buf;
    size_t bytes;
    int peer;
};

// The mock CUDA runtime's events, where the plugin opened it: a collective is
// "launched" on its stream at enqueue and may read its buffers once the stream got there.
struct StreamApi {
    decltype(&::cudaEventCreateWithFlags) create = nullptr;
    decltype(&::cudaEventDestroy) destroy = nullptr;
    decltype(&::cudaEventRecord) record = nullptr;
    int (*reached)(cudaEvent_t) = nullptr; // cudaMockEventReached

    // Resolved once per process from the runtime the plugin already opened.
    static const StreamApi &get() {
        static const StreamApi api = [] {
            StreamApi a;
            const char *path = std::getenv("DISTTRAIN_CUDA_RUNTIME_LIBRARY");
            void *h = path != nullptr && *path != '\0' ? dlopen(path, RTLD_NOW | RTLD_NOLOAD)
                                                       : nullptr;
            if (h == nullptr) return a;
            a.reached = reinterpret_cast<int (*)(cudaEvent_t)>(dlsym(h, "cudaMockEventReached"));
            a.create = reinterpret_cast<decltype(a.create)>(dlsym(h, "cudaEventCreateWithFlags"));
            a.destroy = reinterpret_cast<decltype(a.destroy)>(dlsym(h, "cudaEventDestroy"));
            a.record = reinterpret_cast<decltype(a.record)>(dlsym(h, "cudaEventRecord"));
            if (!a.reached || !a.create || !a.destroy || !a.record) a = StreamApi{};
            return a;
        }();
        return api;
    }

    // An event recorded now on stream, or null where streams are not modelled.
    std::shared_ptr<CUevent_st> launch(cudaStream_t stream) const {
        if (reached == nullptr) return nullptr;
        cudaEvent_t e = nullptr;
        if (create(&e, 0) != cudaSuccess) return nullptr;
        std::shared_ptr<CUevent_st> owned(e, destroy);
        if (record(e, stream) != cudaSuccess) return nullptr;
        return owned;
    }
};

struct Op {
    enum Kind { allreduce, broadcast, allgather, reduce_scatter, p2p, exchange } kind;
    cudaStream_t stream = nullptr;
    std::shared_ptr<CUevent_st> launched; // recorded on stream at enqueue (StreamApi)
    const void *send = nullptr;
    void *recv = nullptr;
    size_t count = 0;
    ncclDataType_t type = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    int root = 0;
    std::vector<P2p> sends, recvs;
    int64_t words[2] = {0, 0};          // exchange: this rank's pair
    std::vector<int64_t> *out = nullptr; // exchange: every rank's pairs
    uint64_t seq = 0;
    bool posted = false;
};

} // namespace

struct ncclComm {
    int nranks = 1;
    int rank = 0;
    int init_polls = 0;
    bool initialised = false;
    bool poll_once_more = false;
    long calls = 0;
    int splits = 0;
    bool first = false; // made by ncclCommInitRankConfig, not a split (..._EXIT_AT)
    bool blocking = false; // made by ncclCommInitRank: every call returns once done
    std::string name;
    std::string last_error;
    ncclResult_t failed = ncclSuccess;
    std::unique_ptr<Wire> wire;
    std::deque<Op> pending;
    uint64_t next_seq = 1;
    std::chrono::steady_clock::time_point next_check{}; // of the peers' liveness
};

namespace {

std::string env(const char *name, const char *fallback) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

bool sync_mode() { return env("DISTTRAIN_MOCK_NCCL_ENQUEUE", "async") == "sync"; }

void log_call(const std::string &what) {
    std::string path = env("DISTTRAIN_MOCK_NCCL_LOG", "");
    if (path.empty()) return;
    if (FILE *f = std::fopen(path.c_str(), "a")) {
        std::fprintf(f, "%s\n", what.c_str());
        std::fclose(f);
    }
}

// Memory of the fake device (tests/plugins/fakedevice), which the CPU cannot touch, is
// moved through its shadow, as a GPU's copy engine would; other memory is used as is.
void *reachable(const void *p) {
    static fakedevice::Arena &arena = fakedevice::acquire_arena(); // kept for the process
    return arena.contains(p) ? arena.shadow(p) : const_cast<void *>(p);
}

ncclResult_t fail(ncclComm_t comm, ncclResult_t rc, const std::string &why) {
    comm->failed = rc;
    comm->last_error = why;
    comm->pending.clear();
    return rc;
}

bool exit_here(ncclComm_t comm) {
    const std::string at = env("DISTTRAIN_MOCK_NCCL_EXIT_AT", "");
    if (at.empty() || !comm->first) return false;
    return at == std::to_string(comm->rank) + ":" + std::to_string(comm->calls);
}

// Writes this rank's contribution into its slot; false when it does not fit.
bool post(ncclComm_t comm, Op &op) {
    Wire &w = *comm->wire;
    char *slot = w.my_slot();
    const size_t sz = size_of(op.type);
    size_t bytes = 0;
    switch (op.kind) {
    case Op::allreduce: case Op::allgather: bytes = op.count * sz; break;
    case Op::reduce_scatter: bytes = op.count * sz * static_cast<size_t>(comm->nranks); break;
    case Op::broadcast: bytes = comm->rank == op.root ? op.count * sz : 0; break;
    case Op::exchange: bytes = sizeof(op.words); break;
    case Op::p2p:
        for (const P2p &s : op.sends) bytes += s.bytes;
        break;
    }
    if (bytes > w.slot_bytes()) return false;
    if (op.kind == Op::exchange) {
        std::memcpy(slot, op.words, sizeof(op.words));
    } else if (op.kind == Op::p2p) {
        uint64_t *table = w.table(comm->rank);
        size_t offset = 0;
        for (int peer = 0; peer < comm->nranks; ++peer) {
            table[peer] = offset;
            for (const P2p &s : op.sends) {
                if (s.peer != peer) continue;
                std::memcpy(slot + offset, reachable(s.buf), s.bytes);
                offset += s.bytes;
            }
        }
        table[comm->nranks] = offset;
    } else if (bytes > 0) {
        std::memcpy(slot, reachable(op.send), bytes);
    }
    return true;
}

// Computes this rank's result from every rank's slot; false on mismatched sizes.
bool finish(ncclComm_t comm, Op &op) {
    const Wire &w = *comm->wire;
    const size_t sz = size_of(op.type);
    const int n = comm->nranks;
    switch (op.kind) {
    case Op::allreduce: case Op::reduce_scatter: {
        const size_t bytes = op.count * sz;
        const size_t at = op.kind == Op::reduce_scatter ? bytes * static_cast<size_t>(comm->rank) : 0;
        std::vector<char> acc(w.slot(0) + at, w.slot(0) + at + bytes);
        for (int r = 1; r < n; ++r) ncclmock::reduce(acc.data(), w.slot(r) + at, op.count, op.type, op.op);
        if (op.op == ncclAvg && n > 1) ncclmock::divide(acc.data(), op.count, op.type, n);
        size_t written = bytes;
        // As NCCL before 2.29.7 (its issue 1950): on one rank, the average's kernel splits
        // the elements among up to 32 blocks rounding down, and the last count % 32 are
        // never written.
        if (op.op == ncclAvg && n == 1 && NCCL_VERSION_CODE < 22907)
            written = (op.count - op.count % 32) * sz;
        if (written > 0) std::memcpy(reachable(op.recv), acc.data(), written);
        return true;
    }
    case Op::broadcast:
        if (comm->rank != op.root && op.count > 0)
            std::memcpy(reachable(op.recv), w.slot(op.root), op.count * sz);
        return true;
    case Op::allgather: {
        const size_t bytes = op.count * sz;
        char *out = static_cast<char *>(reachable(op.recv));
        for (int r = 0; r < n; ++r) std::memmove(out + bytes * static_cast<size_t>(r), w.slot(r), bytes);
        return true;
    }
    case Op::exchange:
        op.out->assign(static_cast<size_t>(2 * n), 0);
        for (int r = 0; r < n; ++r) std::memcpy(op.out->data() + 2 * r, w.slot(r), 16);
        return true;
    case Op::p2p:
        for (int peer = 0; peer < n; ++peer) {
            const uint64_t *t = w.table(peer);
            size_t offset = t[comm->rank];
            const size_t end = t[comm->rank + 1];
            for (const P2p &r : op.recvs) {
                if (r.peer != peer) continue;
                if (offset + r.bytes > end) return false;
                std::memcpy(reachable(r.buf), w.slot(peer) + offset, r.bytes);
                offset += r.bytes;
            }
            if (offset != end) return false;
        }
        return true;
    }
    return false;
}

// Moves the pending collectives' data as far as the peers allow, without waiting.
void drive(ncclComm_t comm) {
    while (comm->failed == ncclSuccess && !comm->pending.empty()) {
        Op &op = comm->pending.front();
        Wire &w = *comm->wire;
        if (!op.posted) {
            // The kernel has not started until its stream got there (a producer's event
            // it waits for, say): nothing of its send buffer may be read before.
            if (op.launched && !StreamApi::get().reached(op.launched.get())) break;
            if (!w.may_post(op.seq)) break;
            if (!post(comm, op)) {
                fail(comm, ncclInvalidArgument, "mock: a contribution larger than "
                     "DISTTRAIN_MOCK_NCCL_SLOT_BYTES");
                return;
            }
            w.post(op.seq);
            op.posted = true;
        }
        if (!w.gathered(op.seq)) break;
        if (!finish(comm, op)) {
            fail(comm, ncclInvalidUsage, "mock: sends and receives of a group do not match");
            return;
        }
        w.consumed(op.seq);
        comm->pending.pop_front();
    }
    // Waiting on a peer: is it still there? At most once a millisecond (it reads /proc).
    auto now = std::chrono::steady_clock::now();
    if (comm->failed == ncclSuccess && !comm->pending.empty() && now >= comm->next_check) {
        comm->next_check = now + std::chrono::milliseconds(1);
        std::string why = comm->wire->peer_failure();
        if (!why.empty()) fail(comm, ncclRemoteError, "mock: " + why);
    }
}

// Sync mode and ncclCommSplit: moves the data before returning, or fails.
ncclResult_t drive_until_done(ncclComm_t comm) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        drive(comm);
        if (comm->failed != ncclSuccess) return comm->failed;
        if (comm->pending.empty()) return ncclSuccess;
        if (std::chrono::steady_clock::now() >= until)
            return fail(comm, ncclSystemError, "mock: the peers did not join within 60 s");
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// Takes op as the communicator's next collective.
void enqueue(ncclComm_t comm, Op op) {
    op.seq = comm->next_seq++;
    if (op.kind != Op::exchange) op.launched = StreamApi::get().launch(op.stream);
    ++comm->calls;
    comm->pending.push_back(std::move(op));
    if (exit_here(comm)) std::_Exit(3); // its part never arrives: the peers are stuck in it
}

ncclResult_t issued(ncclComm_t comm) {
    if (comm->blocking || sync_mode()) return drive_until_done(comm);
    drive(comm);
    comm->poll_once_more = true;
    return ncclInProgress;
}

thread_local int group_depth = 0;
thread_local std::vector<std::pair<ncclComm_t, Op>> group_ops;

// A collective: started now, or at ncclGroupEnd inside a group.
ncclResult_t collective(ncclComm_t comm, Op op) {
    if (comm == nullptr || comm->failed != ncclSuccess) return ncclInvalidUsage;
    if (size_of(op.type) == 0) return ncclInvalidArgument;
    if (group_depth > 0) {
        group_ops.emplace_back(comm, std::move(op));
        return ncclSuccess;
    }
    enqueue(comm, std::move(op));
    return issued(comm);
}

ncclResult_t point_to_point(ncclComm_t comm, P2p p, bool send, cudaStream_t stream) {
    if (group_depth == 0 || comm == nullptr || p.peer < 0 || p.peer >= comm->nranks) {
        return ncclInvalidUsage; // the plugin always groups its sends
    }
    // The sends and receives of one group on one communicator move as one exchange.
    Op *op = nullptr;
    for (auto &g : group_ops)
        if (g.first == comm && g.second.kind == Op::p2p) op = &g.second;
    if (op == nullptr) {
        Op fresh{};
        fresh.kind = Op::p2p;
        fresh.type = ncclUint8;
        fresh.stream = stream;
        group_ops.emplace_back(comm, std::move(fresh));
        op = &group_ops.back().second;
    }
    (send ? op->sends : op->recvs).push_back(p);
    return ncclSuccess;
}

ncclResult_t attach(ncclComm_t *out, int nranks, const std::string &name, int rank,
                    ncclConfig_t *config, bool first) {
    if (config == nullptr || config->blocking != 0) return ncclInvalidArgument;
    auto comm = std::make_unique<ncclComm>();
    comm->nranks = nranks;
    comm->rank = rank;
    comm->name = name;
    comm->first = first;
    size_t slot = std::strtoull(env("DISTTRAIN_MOCK_NCCL_SLOT_BYTES", "67112960").c_str(),
                                nullptr, 10);
    try {
        comm->wire = std::make_unique<Wire>(name, nranks, rank, slot);
    } catch (const std::exception &e) {
        return ncclSystemError;
    }
    *out = comm.release();
    return ncclInProgress;
}

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

// The name of the communicator's shared-memory object, unique per call.
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    std::random_device rd;
    char name[64];
    std::snprintf(name, sizeof(name), "/dtmock-%d-%08x%08x", static_cast<int>(getpid()), rd(), rd());
    std::memset(id->internal, 0, sizeof(id->internal));
    std::memcpy(id->internal, name, std::strlen(name));
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                    int rank, ncclConfig_t *config) {
    log_call("ncclCommInitRankConfig");
    std::string name(id.internal, strnlen(id.internal, sizeof(id.internal)));
    if (name.rfind("/dtmock-", 0) != 0) return ncclInvalidArgument;
    return attach(comm, nranks, name, rank, config, true);
}

// A blocking communicator, as the raw-NCCL side of tests/bench/nccl_overhead.c makes:
// the non-blocking set-up, polled here until every rank attached (or 60 s passed).
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc = ncclCommInitRankConfig(comm, nranks, id, rank, &config);
    if (rc != ncclInProgress) return rc;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress && std::chrono::steady_clock::now() < until) {
        ncclCommGetAsyncError(*comm, &state);
        if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (state != ncclSuccess) {
        delete *comm;
        *comm = nullptr;
        return state == ncclInProgress ? ncclSystemError : state;
    }
    (*comm)->blocking = true;
    return ncclSuccess;
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
        } else if (!comm->wire->all_attached()) {
            *state = ncclInProgress; // the plugin's deadline bounds the wait
        } else {
            comm->wire->unlink(); // every rank has it open: the name is no longer needed
            comm->initialised = true;
            *state = ncclSuccess;
        }
        return ncclSuccess;
    }
    long after = std::strtol(env("DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER", "-1").c_str(),
                             nullptr, 10);
    if (after >= 0 && comm->calls >= after && comm->failed == ncclSuccess)
        fail(comm, ncclRemoteError, "mock: a remote rank exited (DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER)");
    drive(comm);
    if (comm->failed != ncclSuccess) {
        *state = comm->failed;
    } else if (!comm->pending.empty()) {
        *state = ncclInProgress;
    } else if (comm->poll_once_more) {
        comm->poll_once_more = false;
        *state = ncclInProgress; // still enqueueing on this poll; done on the next
    } else {
        *state = ncclSuccess;
    }
    return ncclSuccess;
}

#ifndef NCCL_MOCK_NO_SPLIT
// Collective over comm: every rank's (color, key) goes through the parent, then the
// ranks of one color attach to a child named after the parent, this split and the color.
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
    log_call("ncclCommSplit");
    if (comm == nullptr || !comm->initialised || comm->failed != ncclSuccess)
        return ncclInvalidUsage;
    std::vector<int64_t> pairs;
    Op op{};
    op.kind = Op::exchange;
    op.type = ncclUint8;
    op.words[0] = color;
    op.words[1] = key;
    op.out = &pairs;
    op.seq = comm->next_seq++; // not a collective of the caller's: no call counted
    comm->pending.push_back(op);
    ncclResult_t rc = drive_until_done(comm);
    const int split = comm->splits++;
    *newcomm = nullptr;
    if (rc != ncclSuccess) return rc;
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    int nranks = 0, rank = 0;
    for (int r = 0; r < comm->nranks; ++r) {
        if (pairs[2 * r] != color) continue;
        ++nranks;
        if (pairs[2 * r + 1] < key || (pairs[2 * r + 1] == key && r < comm->rank)) ++rank;
    }
    return attach(newcomm, nranks, comm->name + "-" + std::to_string(split) + "c" +
                  std::to_string(color), rank, config, false);
}
#endif

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    log_call("ncclCommFinalize");
    if (comm == nullptr) return ncclInvalidArgument;
    if (sync_mode()) return ncclSuccess;
    comm->poll_once_more = true;
    return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    log_call("ncclCommDestroy");
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    log_call("ncclCommAbort");
    if (comm != nullptr && comm->wire) comm->wire->mark_aborted();
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
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    Op o{};
    o.kind = Op::allreduce;
    o.send = send, o.recv = recv, o.count = count, o.type = t, o.op = op;
    o.stream = stream;
    return collective(comm, std::move(o));
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t,
                           int root, ncclComm_t comm, cudaStream_t stream) {
    if (comm == nullptr || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
    Op o{};
    o.kind = Op::broadcast;
    o.send = send, o.recv = recv, o.count = count, o.type = t, o.root = root;
    o.stream = stream;
    return collective(comm, std::move(o));
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t stream) {
    Op o{};
    o.kind = Op::allgather;
    o.send = send, o.recv = recv, o.count = count, o.type = t;
    o.stream = stream;
    return collective(comm, std::move(o));
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    Op o{};
    o.kind = Op::reduce_scatter;
    o.send = send, o.recv = recv, o.count = count, o.type = t, o.op = op;
    o.stream = stream;
    return collective(comm, std::move(o));
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    if (size_of(t) == 0) return ncclInvalidArgument;
    return point_to_point(comm, {const_cast<void *>(send), count * size_of(t), peer}, true,
                          stream);
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    if (size_of(t) == 0) return ncclInvalidArgument;
    return point_to_point(comm, {recv, count * size_of(t), peer}, false, stream);
}

ncclResult_t ncclGroupStart(void) {
    ++group_depth;
    return ncclSuccess;
}

// Starts the group's collectives, in the order they were called, on their communicators.
ncclResult_t ncclGroupEnd(void) {
    if (group_depth == 0) return ncclInvalidUsage;
    if (--group_depth > 0) return ncclSuccess;
    std::vector<std::pair<ncclComm_t, Op>> ops = std::move(group_ops);
    group_ops.clear();
    if (ops.empty()) return ncclSuccess;
    log_call("ncclGroupEnd " + std::to_string(ops.size()));
    std::vector<ncclComm_t> comms;
    for (auto &g : ops) {
        enqueue(g.first, std::move(g.second));
        bool seen = false;
        for (ncclComm_t c : comms) seen = seen || c == g.first;
        if (!seen) comms.push_back(g.first);
    }
    ncclResult_t rc = ncclSuccess;
    for (ncclComm_t c : comms) {
        ncclResult_t one = issued(c);
        if (rc == ncclSuccess || rc == ncclInProgress) rc = one == ncclSuccess ? rc : one;
    }
    return rc;
}

} // extern "C"

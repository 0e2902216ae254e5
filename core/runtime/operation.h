/* SPDX-License-Identifier: Apache-2.0 */
// One collective call as the engine sees it: what to run, and its completion, which the
// caller's thread waits for (dt_request_wait) while the engine thread runs it.
#pragma once

#include <disttrain/disttrain.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dt {

// Appended kinds keep the values of the older ones: they travel in negotiation messages
// and call checks, and index the router's kind bits.
enum class OpKind {
    allreduce,
    broadcast,
    allgather,
    reduce_scatter,
    alltoall,
    barrier,
    join,
    allgatherv, // uneven blocks: counts holds every rank's count
    alltoallv,  // uneven blocks: counts holds the sendcounts, then the recvcounts
};

const char *op_kind_name(OpKind kind) noexcept;

struct OpDesc {
    OpKind kind = OpKind::barrier;
    std::string name;
    const void *sendbuf = nullptr;
    void *recvbuf = nullptr;
    size_t count = 0; // elements; per rank block for allgather/reduce_scatter/alltoall;
                      // allgatherv, alltoallv: the elements this rank receives in all
    // allgatherv: one count per rank (the recvcounts); alltoallv: size sendcounts, then
    // size recvcounts. Copied at the call, so the caller's arrays need not outlive it.
    std::vector<size_t> counts;
    dt_dtype_t dtype = DT_UINT8;
    dt_reduce_op_t op = DT_SUM;
    int root = 0;
    uint32_t group = 0; // 0: the whole job; else a group made by dt_group_create
    // Where sendbuf and recvbuf live, as the C API resolved it: host or device, never
    // DT_MEMORY_AUTO. Ranks must agree on it (signature.h); device and stream are this
    // rank's own and are not compared.
    dt_memory_type_t memory = DT_MEMORY_HOST;
    int device = -1;          // the buffers' device (runtime/buffer_memory.h); -1: unknown
    void *stream = nullptr;   // the producer's stream (opaque), for device memory
    // Device memory: an event recorded on stream when the call was made (null: none),
    // after which staging's copies may start (plugin/memory_provider.h). Released when
    // the operation completes.
    std::shared_ptr<void> ready;
    bool blocking = false; // the caller waits for it at once (nothing else will follow)
    // Set on dt_group_create's agreement check (an allgather over the parent): the group
    // it agrees on, which the router gives a device communicator of its own once the
    // check ran, on the thread that holds the transports (Router::split_device).
    struct NewGroup {
        uint32_t id = 0;
        std::vector<int> members; // world ranks, in group rank order
    };
    std::shared_ptr<const NewGroup> new_group;
};

// The engine thread's wake-up: its lock, its condition variable, and the "someone waits"
// flag. Shared with the operations it runs, so that a caller waiting for one can ask the
// engine to negotiate now rather than at its next tick, even if the context is gone.
struct EngineWakeup {
    std::mutex mutex;
    std::condition_variable cv;
    bool waited = false; // a caller waits for an operation that is not done
    int blocked = 0;     // callers waiting now for operations not done
};

class Operation {
public:
    explicit Operation(OpDesc desc) : desc_(std::move(desc)) {}

    const OpDesc &desc() const { return desc_; }

    // Called once by the engine; result is the operation's value (join: the last rank
    // to join).
    void complete(dt_status_t status, std::string message, int64_t result = 0);

    bool done() const;
    // Waits until done or timeout; negative timeout waits without limit. True if done.
    // Wakes the engine first if the operation is not done: the caller has nothing else
    // to hand it, so gathering more operations for the next tick gains nothing.
    bool wait(std::chrono::milliseconds timeout) const;
    // Set by the engine before the operation is queued.
    void set_wakeup(std::shared_ptr<EngineWakeup> wakeup) { wakeup_ = std::move(wakeup); }
    // Valid once done().
    dt_status_t status() const;
    std::string message() const;
    int64_t result() const;

private:
    bool wait_done(std::chrono::milliseconds timeout) const;

    OpDesc desc_;
    std::shared_ptr<EngineWakeup> wakeup_;
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    bool done_ = false;
    dt_status_t status_ = DT_INPROGRESS;
    std::string message_;
    int64_t result_ = 0;
};

} // namespace dt

// One collective call as the engine sees it: what to run, and its completion, which the
// caller's thread waits for (dt_request_wait) while the engine thread runs it.
#pragma once

#include <disttrain/disttrain.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace dt {

enum class OpKind { allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier, join };

const char *op_kind_name(OpKind kind) noexcept;

struct OpDesc {
    OpKind kind = OpKind::barrier;
    std::string name;
    const void *sendbuf = nullptr;
    void *recvbuf = nullptr;
    size_t count = 0; // elements; per rank block for allgather/reduce_scatter/alltoall
    dt_dtype_t dtype = DT_UINT8;
    dt_reduce_op_t op = DT_SUM;
    int root = 0;
    uint32_t group = 0; // 0: the whole job; else a group made by dt_group_create
    bool blocking = false; // the caller waits for it at once (nothing else will follow)
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
    bool wait(std::chrono::milliseconds timeout) const;
    // Valid once done().
    dt_status_t status() const;
    std::string message() const;
    int64_t result() const;

private:
    OpDesc desc_;
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    bool done_ = false;
    dt_status_t status_ = DT_INPROGRESS;
    std::string message_;
    int64_t result_ = 0;
};

} // namespace dt

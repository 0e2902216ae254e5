// SPDX-License-Identifier: Apache-2.0
#include "runtime/operation.h"

namespace dt {

const char *op_kind_name(OpKind kind) noexcept
{
    switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::allgather: return "allgather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::alltoall: return "alltoall";
    case OpKind::barrier: return "barrier";
    case OpKind::join: return "join";
    case OpKind::allgatherv: return "allgatherv";
    case OpKind::alltoallv: return "alltoallv";
    }
    return "unknown";
}

void Operation::complete(dt_status_t status, std::string message, int64_t result)
{
    std::shared_ptr<void> ready;
    {
        std::lock_guard lock(mutex_);
        status_ = status;
        result_ = result;
        message_ = std::move(message);
        done_ = true;
        // The producer's event has served once the operation ended: back to the
        // provider's spares now, not when the caller frees its request.
        ready = std::move(desc_.ready);
    }
    cv_.notify_all();
}

bool Operation::done() const
{
    std::lock_guard lock(mutex_);
    return done_;
}

bool Operation::wait(std::chrono::milliseconds timeout) const
{
    if (wakeup_ && !done()) {
        {
            std::lock_guard lock(wakeup_->mutex);
            wakeup_->waited = true;
            ++wakeup_->blocked;
        }
        wakeup_->cv.notify_all();
        struct Unblock {
            EngineWakeup &w;
            ~Unblock()
            {
                std::lock_guard lock(w.mutex);
                --w.blocked;
            }
        } unblock{*wakeup_};
        return wait_done(timeout);
    }
    return wait_done(timeout);
}

bool Operation::wait_done(std::chrono::milliseconds timeout) const
{
    std::unique_lock lock(mutex_);
    if (timeout.count() < 0) {
        cv_.wait(lock, [&] { return done_; });
        return true;
    }
    return cv_.wait_for(lock, timeout, [&] { return done_; });
}

dt_status_t Operation::status() const
{
    std::lock_guard lock(mutex_);
    return status_;
}

std::string Operation::message() const
{
    std::lock_guard lock(mutex_);
    return message_;
}

} // namespace dt

namespace dt {

int64_t Operation::result() const
{
    std::lock_guard lock(mutex_);
    return result_;
}

} // namespace dt

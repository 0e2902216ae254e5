// SPDX-License-Identifier: Apache-2.0
// Ordered mode (DISTTRAIN_ORDERED=1): the user promises that every rank submits the same
// operations in the same order, as MPI and NCCL require. There is then nothing to
// negotiate: operations run in submission order, a blocking one on the caller's own
// thread when nothing is queued ahead of it. Each call carries a check of what it is
// (runtime/call_check.h), so a rank that breaks the promise gets an error, not wrong
// data. Whoever runs an operation holds the transport (transport_busy_), so the plugin
// still sees one caller at a time.
#include "algorithms/comm.h"
#include "runtime/call_check.h"
#include "runtime/engine.h"
#include "runtime/error.h"
#include "runtime/signature.h"

namespace dt {

// Wakes the engine thread only when it has something to do now: queued work, a stop or
// an abort. A blocking call that ran on its caller's thread with nothing queued behind it
// must not wake it, or every call pays a futex wake and a context switch (on a host with
// a core per rank, the engine thread shares the caller's core and preempts it).
void Engine::release_transport()
{
    bool wake;
    {
        std::lock_guard lock(mutex_);
        transport_busy_ = false;
        wake = stopping_ || cancel_.load() || !intake_.empty();
    }
    if (wake)
        cv_.notify_all();
}

void Engine::ordered_loop()
{
    for (;;) {
        std::shared_ptr<Operation> op;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] {
                return !transport_busy_ &&
                       (stopping_ || cancel_.load() || !intake_.empty());
            });
            if (cancel_.load() || (stopping_ && intake_.empty())) {
                transport_busy_ = true; // ours until the engine is gone
                return;
            }
            op = std::move(intake_.front());
            intake_.pop_front();
            intake_bytes_ -= std::min(intake_bytes_,
                                      op->desc().count * dt_dtype_size(op->desc().dtype));
            transport_busy_ = true;
        }
        run_ordered(*op);
        release_transport();
    }
}

void Engine::run_ordered(Operation &op)
{
    const OpDesc &d = op.desc();
    if (auto err = error()) {
        calls_failed_ = true;
        op.complete(err->first, cat(op_kind_name(d.kind), " '", d.name, "' cannot run: ",
                                    err->second));
        return;
    }
    if (d.kind == OpKind::join && !ordered_asked_) { // a job of one rank: it has joined
        op.complete(DT_OK, {}, rank_);
        return;
    }
    if (d.kind == OpKind::join) {
        op.complete(DT_ERR_UNSUPPORTED, "join needs the engine's negotiation; it is not "
                                        "available with DISTTRAIN_ORDERED=1");
        return;
    }
    try {
        // The whole job (group 0) needs no member list: no copy, no lock per call.
        std::vector<int> ranks;
        if (d.group != 0) {
            ranks = members(d.group);
            if (!is_member(d.group))
                throw_error(DT_ERR_INTERNAL, "rank ", rank_, " is not in group ", d.group);
        }
        // Before, not after: a peer that left fails the operation at once, but one that
        // completed here is not failed because a peer left right after it.
        check_control();
        const uint64_t tag = next_op_tag(d.group);
        // Nothing was negotiated: the check that travels with the data is what turns a
        // rank that disagrees into an error instead of a wrong result.
        const CallCheck check = call_check_of(d, call_number(tag));
        algo::Comm c = comm(tag, op_kind_name(d.kind), d.group != 0 ? &ranks : nullptr);
        c.set_check(&check, d.name.c_str());
        const auto start = Clock::now();
        const char *path =
            router_.run(c, d, d.group != 0 ? static_cast<int>(ranks.size()) : size_);
        if (timeline_) // nothing was negotiated or queued: the collective is the whole story
            timeline_->phase(d.name, op_kind_name(d.kind), start, Clock::now(),
                             cat(R"("bytes":)", d.count * dt_dtype_size(d.dtype),
                                 R"(,"path":")", path, '"'));
        op.complete(DT_OK, {});
    } catch (const AgreedFailure &e) {
        // Every member failed it alike before its data moved: the context goes on.
        op.complete(e.status(), e.what());
    } catch (const Error &e) {
        auto [status, message] = root_cause(e.status(), e.what());
        break_context(status, message, dynamic_cast<const PeerLeft *>(&e) != nullptr);
        calls_failed_ = true;
        op.complete(status, cat(op_kind_name(d.kind), " '", d.name, "' failed: ", message));
        fail_all(status, message);
    }
}

} // namespace dt

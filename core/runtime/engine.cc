// SPDX-License-Identifier: Apache-2.0
// Engine life cycle: the thread, intake of submitted operations, and failures.
#include "runtime/engine.h"

#include "algorithms/comm.h"
#include "runtime/error.h"
#include "runtime/env.h"
#include "runtime/leaving_notice.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cstring>

namespace dt {

namespace {

std::chrono::milliseconds stall_warn_from_env()
{
    return std::chrono::seconds(env::get_int("DISTTRAIN_STALL_WARN_S", 60, 0, 7 * 24 * 3600));
}

std::vector<int> all_ranks(int size)
{
    std::vector<int> out(size);
    for (int i = 0; i < size; ++i)
        out[i] = i;
    return out;
}

} // namespace

Engine::Engine(Transport &transport, const ContextConfig &config, routing::Router &router,
               Timeline *timeline)
    : transport_(transport), router_(router), rank_(config.ranks.rank), size_(config.ranks.size),
      timeout_(config.timeout), cycle_time_(config.cycle_time_ms),
      fusion_threshold_(static_cast<size_t>(config.fusion_threshold)),
      stall_warn_(stall_warn_from_env()), ordered_asked_(config.ordered),
      ordered_(config.ordered || size_ == 1), timeline_(timeline)
{
    groups_[0] = all_ranks(size_);
    if (rank_ == 0)
        coordinator_ = std::make_unique<Coordinator>(
            size_, timeout_, stall_warn_, [this](uint32_t group) { return members(group); });
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine()
{
    stop();
}

void Engine::note_lost_peers()
{
    // A closed connection fails a control receive only when the transport progresses
    // (ordered mode does so on the callers' threads, and not after a failure).
    transport_.ops().progress(transport_.instance(), 0);
    std::vector<int> now = failed_control_receives();
    std::lock_guard lock(lost_mutex_);
    for (int peer : now)
        if (std::find(lost_peers_.begin(), lost_peers_.end(), peer) == lost_peers_.end())
            lost_peers_.push_back(peer);
}

std::vector<int> Engine::stop()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
    std::lock_guard lock(lost_mutex_);
    return lost_peers_;
}

void Engine::submit(std::shared_ptr<Operation> op)
{
    if (!ordered_)
        op->set_wakeup(wakeup_); // ordered mode has no tick to cut short
    std::unique_lock lock(mutex_);
    if (error_) {
        auto [status, message] = *error_;
        calls_failed_ = true;
        lock.unlock();
        op->complete(status, cat(op_kind_name(op->desc().kind), " '", op->desc().name,
                                 "' cannot run: ", message));
        return;
    }
    const OpDesc &d = op->desc();
    if (ordered_ && d.blocking && intake_.empty() && !transport_busy_) {
        // Nothing is queued ahead of it: run it here, without a thread handoff.
        transport_busy_ = true;
        lock.unlock();
        run_ordered(*op);
        release_transport();
        return;
    }
    const bool first = intake_.empty();
    intake_bytes_ += d.count * dt_dtype_size(d.dtype);
    intake_.push_back(std::move(op));
    // Wake at once for a blocking call, a fusion buffer's worth or the first operation
    // of an idle job; otherwise the cycle timer gathers more operations into one
    // negotiation and one fused transfer. A quiet engine wakes to shorten its sleep.
    bool now = d.blocking || ordered_ || intake_bytes_ >= fusion_threshold_ ||
               cycle_time_.count() == 0 || idle_ || (quiet_ && first);
    lock.unlock();
    if (now)
        cv_.notify_all();
}

void Engine::abort()
{
    {
        std::lock_guard lock(mutex_);
        if (!error_)
            error_ = {DT_ERR_ABORTED, cat("rank ", rank_, " aborted its context")};
        // Under the lock: a waiter tests cancel_ in its predicate while holding it, so a
        // store outside could land between its test and its sleep and the wake be lost.
        cancel_.store(true);
    }
    cv_.notify_all();
}

std::optional<std::pair<dt_status_t, std::string>> Engine::error() const
{
    std::lock_guard lock(mutex_);
    return error_;
}

bool Engine::departure_only() const
{
    std::lock_guard lock(mutex_);
    return error_ && departure_only_;
}

bool Engine::register_group(uint32_t id, std::vector<int> ranks)
{
    std::lock_guard lock(groups_mutex_);
    auto known = groups_.find(id);
    if (known != groups_.end() && known->second != ranks)
        return false;
    groups_[id] = std::move(ranks);
    bool outside = false;
    for (const auto &[gid, in_group] : groups_)
        outside = outside || std::find(in_group.begin(), in_group.end(), rank_) == in_group.end();
    outside_a_group_.store(outside, std::memory_order_relaxed);
    return true;
}

std::vector<int> Engine::members(uint32_t group) const
{
    std::lock_guard lock(groups_mutex_);
    auto it = groups_.find(group);
    if (it == groups_.end())
        throw_error(DT_ERR_INTERNAL, "group ", group, " is not known on rank ", rank_);
    return it->second;
}

bool Engine::is_member(uint32_t group) const { return group_rank(group) >= 0; }

int Engine::group_rank(uint32_t group) const
{
    if (group == 0)
        return rank_;
    // A group this rank never saw created (made inside a parent it is not in) cannot
    // have it as a member: members register a group before any of its calls can start.
    {
        std::lock_guard lock(groups_mutex_);
        if (!groups_.count(group))
            return -1;
    }
    auto m = members(group);
    for (size_t i = 0; i < m.size(); ++i)
        if (m[i] == rank_)
            return static_cast<int>(i);
    return -1;
}

algo::Comm Engine::comm(uint64_t tag, const char *what, const std::vector<int> *members)
{
    auto deadline = timeout_.count() > 0 ? Clock::now() + timeout_ : Clock::time_point::max();
    int rank = rank_, size = size_;
    if (members != nullptr) {
        size = static_cast<int>(members->size());
        for (int i = 0; i < size; ++i)
            if ((*members)[i] == rank_)
                rank = i;
    }
    algo::Comm c(transport_, rank, size, tag, deadline, what);
    if (members != nullptr)
        c.set_members(members);
    c.set_cancel(&cancel_);
    c.set_departure_check([this](int peer) { return departure_notice(peer); });
    const bool negotiation = tag >= kNegotiationTagBase && tag < kControlTag;
    c.set_failure_hook([this, negotiation](dt_status_t status, const std::string &message) {
        // The transport still works: tell the peers why this rank is leaving, and note
        // which peers are gone before the abort fails every control receive alike.
        note_lost_peers();
        auto err = error();
        if (status == DT_ERR_ABORTED && err)
            notify_peers(DT_ERR_ABORTED, err->second);
        else if (status == DT_ERR_MISMATCH)
            notify_peers(DT_ERR_MISMATCH, message); // every rank's error alike
        else {
            // A disagreement found elsewhere stays one (this rank may have lost the
            // connection to the rank that found it before reading its notice). The
            // notice carries the cause's status, so the peers can tell a rank that left
            // from one that is alive with an error of its own (Comm::Departure::verb).
            auto [cause, text] = root_cause(status, message);
            // A peer that left cleanly ends a negotiation this rank waited in with no
            // call of its own in flight (nothing submitted, no join): as at a clean exit,
            // it did its part of every call, and a peer still finishing the last native
            // collective may finish it.
            if (negotiation && first_notice_clean() && pending_.empty() && !join_op_ &&
                !calls_failed_)
                notify_peers(DT_OK, cat("rank ", rank_, " stopped with every call it made "
                                        "completed, after: ", text));
            else
                notify_peers(cause, text);
        }
    });
    return c;
}

Engine::Clock::duration Engine::quiet_tick() const
{
    // Well within the time-out, which a peer waiting in the negotiation counts down.
    Clock::duration tick = std::min<Clock::duration>(cycle_time_ * kQuietTickCycles,
                                                     kQuietTickMax);
    if (timeout_.count() > 0)
        tick = std::min<Clock::duration>(tick, timeout_ / 8);
    return std::max<Clock::duration>(tick, cycle_time_);
}

bool Engine::waits_for_own_submission() const
{
    // A rank outside some group keeps step for that group's operations.
    return pending_.empty() && !join_op_ && !joined_mode() &&
           !outside_a_group_.load(std::memory_order_relaxed);
}

// Waits for the next cycle; false when the engine should stop.
bool Engine::wait_for_work()
{
    const bool quiet = cycle_time_.count() > 0 && waits_for_own_submission();
    std::unique_lock lock(mutex_);
    auto wake = [&] {
        return stopping_ || cancel_.load() || intake_bytes_ >= fusion_threshold_ ||
               (cycle_time_.count() == 0 && !intake_.empty()) ||
               (!intake_.empty() && intake_.back()->desc().blocking) || wakeup_->waited ||
               (idle_ && !intake_.empty());
    };
    quiet_ = quiet;
    idle_ = idle_cycles_ > 0;
    if (cycle_time_.count() > 0) {
        const auto start = Clock::now();
        auto deadline = start + (quiet ? quiet_tick() : next_tick());
        while (!wake()) {
            // Quiet: a submission ends the sleep where an ordinary tick would have
            // ended it, which gathers operations submitted together into one cycle.
            if (quiet && !intake_.empty())
                deadline = std::min(deadline, start + cycle_time_);
            // A caller blocked on an operation that waits for a late peer: join the
            // cycle that peer starts as soon as it starts it, instead of at this rank's
            // tick (a tick late). Every operation of this rank is in already (its caller
            // waits), so a batch is not split; the peer's cycle holds what that peer had.
            const bool watch = !quiet && wakeup_->blocked > 0 && !pending_.empty() &&
                               negotiates_on_this_host_;
            const auto until = watch ? std::min(deadline, Clock::now() + kPeerWatch) : deadline;
            if (cv_.wait_until(lock, until) == std::cv_status::timeout &&
                (until == deadline ||
                 router_.peer_waits_on_this_host(kNegotiationTagBase + cycle_seq_)))
                break;
        }
    }
    quiet_ = false;
    wakeup_->waited = false; // one cycle at once per wait; then the tick again
    if (cancel_.load())
        return false;
    std::deque<std::shared_ptr<Operation>> incoming;
    incoming.swap(intake_);
    intake_bytes_ = 0;
    bool stop = stopping_ && incoming.empty() && pending_.empty() && !join_op_;
    lock.unlock();
    admit(incoming);
    return !stop;
}

void Engine::admit(std::deque<std::shared_ptr<Operation>> &incoming)
{
    auto now = Clock::now();
    for (auto &op : incoming) {
        const OpDesc &d = op->desc();
        if (d.kind == OpKind::join) {
            if (join_op_) {
                op->complete(DT_ERR_INVALID_STATE,
                             cat("join: this rank has already joined; wait for that join "
                                 "to complete before joining again"));
                continue;
            }
            join_op_ = op;
            join_reported_ = false;
            continue;
        }
        // Names are per group: the same name in two groups is two operations.
        std::string key = d.group == 0 ? d.name : cat(d.name, "@group", d.group);
        if (pending_.count(key)) {
            op->complete(DT_ERR_MISMATCH,
                         cat(op_kind_name(d.kind), " '", key,
                             "': an operation with this name is already in flight on rank ",
                             rank_, "; names must be unique among operations in flight"));
            continue;
        }
        pending_.emplace(key, Pending{op, signature_of(d, d.group), now, false});
    }
}

void Engine::loop()
{
    log::set_rank(size_ > 1 ? rank_ : -1);
    try {
        post_control_receives();
        if (ordered_) {
            release_transport();
            ordered_loop();
        } else {
            while (wait_for_work()) {
                cycle();
                check_control();
            }
        }
    } catch (const Error &e) {
        auto [status, message] = root_cause(e.status(), e.what());
        break_context(status, message, dynamic_cast<const PeerLeft *>(&e) != nullptr);
    } catch (const std::exception &e) {
        break_context(DT_ERR_INTERNAL, cat("internal error: ", e.what()));
    }
    // Leaving: pending work fails with the reason, peers hear why. Unless the transport
    // failed, the exit is graceful: peers still finishing may need what this rank sent.
    auto err = error();
    const bool graceful = !err || departure_only();
    if (err)
        fail_all(err->first, err->second);
    const LeavingNotice notice =
        leaving_notice(rank_, err, err && departure_only(), calls_failed_, notified_);
    if (notice.send)
        notify_peers(notice.status, notice.text);
    if (graceful)
        await_peers_leaving();
    note_lost_peers();
    if (empty_cycles_ > 0)
        DT_LOG(info, "engine", empty_cycles_, " empty negotiation cycles took ",
               std::chrono::duration<double, std::micro>(empty_cycle_time_).count() /
                   static_cast<double>(empty_cycles_),
               " us each on average");
    // The plugin must forget the control receives before their memory goes with the
    // engine. A broken context aborts (the transport may be half-dead); a clean exit
    // finalizes, which lets the peers read our last messages before the connections close.
    if (graceful)
        transport_.finalize();
    else
        transport_.abort();
}

void Engine::complete(Ready &r, dt_status_t status, const std::string &message)
{
    if (!r.op)
        return;
    r.op->complete(status, message);
    pending_.erase(r.name);
}

void Engine::fail_all(dt_status_t status, const std::string &message)
{
    std::deque<std::shared_ptr<Operation>> incoming;
    {
        std::lock_guard lock(mutex_);
        incoming.swap(intake_);
        intake_bytes_ = 0;
    }
    auto fail = [&](Operation &op) {
        calls_failed_ = true;
        op.complete(status, cat(op_kind_name(op.desc().kind), " '", op.desc().name,
                                "' failed: ", message));
    };
    for (auto &op : incoming)
        fail(*op);
    for (auto &[name, p] : pending_)
        fail(*p.op);
    pending_.clear();
    if (join_op_)
        fail(*join_op_);
    join_op_.reset();
}

void Engine::break_context(dt_status_t status, const std::string &message, bool departure)
{
    {
        std::lock_guard lock(mutex_);
        if (!error_) {
            error_ = {status, message};
            departure_only_ = departure;
        }
    }
    bool had_work = !pending_.empty() || join_op_;
    if (had_work)
        DT_LOG(error, "engine", message);
    else
        DT_LOG(info, "engine", message);
}

} // namespace dt

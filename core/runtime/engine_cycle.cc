// SPDX-License-Identifier: Apache-2.0
// One negotiation cycle: every rank takes part, with or without work, so they stay in
// step. Cached operations are agreed with one MIN allreduce of a byte per cache slot;
// new ones (and joins, stalls, time-outs) take a round trip through the coordinator.
#include "algorithms/algorithms.h"
#include "runtime/engine.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>

namespace dt {

namespace {

// How often rank 0 asks for a coordinator round while operations wait there, so that
// stalls are reported and time-outs fire even when no rank has news.
constexpr auto kCoordinatorPoll = std::chrono::milliseconds(500);

} // namespace

// Byte 0: 1 when this rank has no news for the coordinator. Then one byte per cache slot
// (ResponseCache::kInvalid / kAbsent / kReady). Last byte: 1 when this rank has nothing
// pending (after the MIN: when no rank has), which sets the next tick (next_tick).
std::vector<uint8_t> Engine::cache_state(Clock::time_point now)
{
    std::vector<uint8_t> state(1 + cache_.slot_count() + 1, ResponseCache::kAbsent);
    state.back() = pending_.empty() && !join_op_ ? 1 : 0;
    bool news = join_op_ && !join_reported_;
    // Free slots and slots of groups this rank is not in are neutral.
    for (size_t slot = 0; slot < cache_.slot_count(); ++slot)
        state[1 + slot] = cache_.occupied(slot) && is_member(cache_.at(slot).sig.group)
                              ? ResponseCache::kAbsent
                              : ResponseCache::kReady;
    for (auto &[name, p] : pending_) {
        if (!p.first_cycle)
            p.first_cycle = now;
        int slot = cache_.find(name);
        if (slot < 0 || joined_mode()) {
            news = news || !p.reported;
            continue;
        }
        uint8_t &s = state[1 + slot];
        // A cached operation some rank never submits would wait here unseen: past the
        // stall warning (or half the timeout) it goes to the coordinator, which knows
        // who is missing, warns, and times it out.
        auto age = now - p.submitted;
        bool stalled = (stall_warn_.count() > 0 && age >= stall_warn_) ||
                       (timeout_.count() > 0 && age >= timeout_ / 2);
        if (p.reported || !(cache_.at(slot).sig == p.sig) || stalled)
            s = ResponseCache::kInvalid; // resolve through the coordinator instead
        else
            s = ResponseCache::kReady;
    }
    if (coordinator_ && coordinator_->has_pending() &&
        now - last_coordination_ >= kCoordinatorPoll)
        news = true;
    state[0] = news ? 0 : 1;
    return state;
}

void Engine::cycle()
{
    auto now = Clock::now();
    std::vector<uint8_t> state = cache_state(now);
    {
        algo::Comm c = comm(kNegotiationTagBase + cycle_seq_++, "negotiation");
        agree(c, state);
    }

    std::vector<Ready> ready;
    std::vector<int> invalid;
    for (size_t slot = 0; slot < cache_.slot_count(); ++slot) {
        if (!cache_.occupied(slot))
            continue;
        uint8_t s = state[1 + slot];
        if (s == ResponseCache::kInvalid) {
            invalid.push_back(static_cast<int>(slot));
        } else if (s == ResponseCache::kReady) {
            const auto &entry = cache_.at(slot);
            auto it = pending_.find(entry.name);
            if (it == pending_.end() && !is_member(entry.sig.group))
                ready.push_back({entry.name, entry.sig, nullptr, now, now, false});
            else if (it == pending_.end())
                throw_error(DT_ERR_INTERNAL, "cached ", op_kind_name(entry.sig.kind), " '",
                            entry.name, "' is ready but rank ", rank_, " has not submitted it");
            else
                ready.push_back({entry.name, entry.sig, it->second.op, it->second.submitted, now});
        }
    }
    // Every rank saw the same bytes, so every rank drops the same slots.
    for (int slot : invalid) {
        auto it = pending_.find(cache_.at(slot).name);
        if (it != pending_.end())
            it->second.reported = false; // to the coordinator next
        cache_.erase(slot);
    }
    if (state[0] == 0)
        slow_path(ready, now);
    // Every rank saw the same last byte, so every rank picks the same next tick.
    idle_cycles_ = state.back() == 1 && state[0] == 1 && ready.empty() ? idle_cycles_ + 1 : 0;
    if (!ready.empty()) {
        execute(ready);
    } else if (state[0] == 1 && pending_.empty()) {
        ++empty_cycles_;
        empty_cycle_time_ += Clock::now() - now;
    }
}

void Engine::agree(algo::Comm &c, std::vector<uint8_t> &state)
{
    // Ranks that all share this host agree through shared memory: a cache line's round
    // trip instead of a loopback transfer each way, and no system call while the peers
    // are on time. Shared memory does not carry the transport's control traffic, so the
    // transport is still driven once a cycle: a peer's notice or closed connection is
    // then seen by check_control after this cycle, as it is after a transfer.
    routing::Args args;
    args.kind = OpKind::allreduce;
    args.sendbuf = state.data();
    args.recvbuf = state.data();
    args.count = state.size();
    args.dtype = DT_UINT8;
    args.op = DT_MIN;
    args.name = "negotiation";
    negotiates_on_this_host_ = router_.run_on_this_host(c, args) != nullptr;
    if (negotiates_on_this_host_) {
        transport_.ops().progress(transport_.instance(), 0);
        return;
    }
    algo::allreduce(c, {state.data(), state.data(), state.size(), DT_UINT8, DT_MIN},
                    router_.policy().algorithm);
}

Engine::Clock::duration Engine::next_tick() const
{
    // 1 ms while any rank has work (the default tick), then 2, 4, 8 ms while none has.
    unsigned doublings = std::min<uint64_t>(idle_cycles_, kIdleBackoffDoublings);
    return cycle_time_ * (1 << doublings);
}

void Engine::slow_path(std::vector<Ready> &ready, Clock::time_point now)
{
    std::vector<Record> records;
    for (auto &[name, p] : pending_) {
        if (p.reported || (cache_.find(name) >= 0 && !joined_mode()))
            continue;
        Record rec{Record::Type::request, name, p.sig, {}};
        if (p.first_cycle && now > *p.first_cycle)
            rec.waited_us = static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(now - *p.first_cycle)
                    .count());
        if (p.sig.group != 0)
            for (int m : members(p.sig.group))
                rec.members.push_back(m);
        records.push_back(std::move(rec));
        p.reported = true;
    }
    if (join_op_ && !join_reported_) {
        records.push_back({Record::Type::join, {}, {}, {}});
        join_reported_ = true;
    }

    algo::Comm c = comm(kNegotiationTagBase + cycle_seq_++, "negotiation");
    std::vector<uint8_t> reply;
    if (rank_ != 0) {
        std::vector<uint8_t> bytes = encode(records);
        uint64_t len = bytes.size();
        c.send(0, &len, sizeof len);
        c.send(0, bytes.data(), bytes.size());
    } else {
        for (const auto &rec : records)
            coordinator_->add(0, rec, now);
        for (int peer = 1; peer < size_; ++peer) {
            uint64_t len = 0;
            c.recv(peer, &len, sizeof len);
            if (len > (uint64_t(1) << 30))
                throw_error(DT_ERR_PROTOCOL, "rank ", peer, " sent a negotiation message of ",
                            len, " bytes");
            std::vector<uint8_t> bytes(len);
            c.recv(peer, bytes.data(), bytes.size());
            for (const auto &rec : decode_records(bytes))
                coordinator_->add(peer, rec, now);
        }
        reply = encode(coordinator_->decide(now));
        last_coordination_ = now;
    }
    uint64_t len = reply.size();
    algo::broadcast(c, &len, sizeof len, 0);
    reply.resize(len);
    algo::broadcast(c, reply.data(), reply.size(), 0);
    apply(decode_responses(reply), ready, now);
}

void Engine::apply(const ResponseList &list, std::vector<Ready> &ready, Clock::time_point now)
{
    joined_.assign(list.joined.begin(), list.joined.end());
    bool me_joined = false;
    for (int r : joined_)
        me_joined = me_joined || r == rank_;
    for (const auto &resp : list.responses) {
        switch (resp.type) {
        case Response::Type::ready: {
            auto it = pending_.find(resp.name);
            std::shared_ptr<Operation> op = it != pending_.end() ? it->second.op : nullptr;
            auto submitted = it != pending_.end() ? it->second.submitted : now;
            bool member = is_member(resp.sig.group);
            if (!op && member && !me_joined)
                throw_error(DT_ERR_INTERNAL, "the coordinator says ", op_kind_name(resp.sig.kind),
                            " '", resp.name, "' is ready, but rank ", rank_,
                            " has not submitted it");
            if (!joined_mode())
                cache_.insert(resp.name, resp.sig);
            ready.push_back({resp.name, resp.sig, op, submitted, now, member});
            break;
        }
        case Response::Type::error: {
            auto it = pending_.find(resp.name);
            if (it != pending_.end()) {
                it->second.op->complete(static_cast<dt_status_t>(resp.status), resp.message);
                pending_.erase(it);
            }
            break;
        }
        case Response::Type::join_done:
            if (join_op_)
                join_op_->complete(DT_OK, {}, resp.last_joined);
            join_op_.reset();
            join_reported_ = false;
            joined_.clear();
            break;
        }
    }
}

} // namespace dt

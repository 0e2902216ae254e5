// SPDX-License-Identifier: Apache-2.0
#include "runtime/coordinator.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>

namespace dt {

Coordinator::Coordinator(int size, std::chrono::milliseconds timeout,
                         std::chrono::milliseconds stall_warn,
                         std::function<std::vector<int>(uint32_t)> members)
    : size_(size), timeout_(timeout), stall_warn_(stall_warn), members_(std::move(members))
{
}

void Coordinator::add(int rank, const Record &record, Clock::time_point now)
{
    if (record.type == Record::Type::join) {
        joined_.insert(rank);
        last_joined_ = rank;
        return;
    }
    if (record.sig.group != 0 && !record.members.empty())
        groups_.try_emplace(record.sig.group, record.members.begin(), record.members.end());
    auto [it, inserted] = entries_.try_emplace(record.name);
    // The wait counts from when the first rank began waiting, which may be before the
    // record came (a rank whose cached operation some peer never submitted sends it only
    // once it has waited a while).
    // (Bounded, so that a nonsensical value cannot overflow the arithmetic.)
    constexpr uint64_t kMaxWaitUs = uint64_t(30) * 24 * 3600 * 1000000;
    Clock::time_point since =
        now - std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(
                  static_cast<int64_t>(std::min(record.waited_us, kMaxWaitUs))));
    if (inserted) {
        it->second.first_seen = since;
        it->second.last_warned = since;
        order_.push_back(record.name);
    } else if (since < it->second.first_seen) {
        it->second.first_seen = since;
    }
    it->second.by_rank[rank] = record.sig;
}

std::vector<int> Coordinator::required(const Signature &sig) const
{
    std::vector<int> out;
    auto learned = groups_.find(sig.group);
    for (int r : learned != groups_.end() ? learned->second : members_(sig.group))
        if (!(sig.kind == OpKind::allreduce && joined_.count(r)))
            out.push_back(r);
    return out;
}

std::vector<int> Coordinator::missing(const Entry &entry) const
{
    std::vector<int> out;
    for (int r : required(entry.by_rank.begin()->second))
        if (!entry.by_rank.count(r))
            out.push_back(r);
    return out;
}

ResponseList Coordinator::decide(Clock::time_point now)
{
    ResponseList list;
    std::vector<std::string> still_pending;
    for (const auto &name : order_) {
        Entry &entry = entries_.at(name);
        std::vector<std::pair<int, Signature>> sigs(entry.by_rank.begin(), entry.by_rank.end());
        const Signature &sig = sigs.front().second;
        std::vector<int> submitted;
        for (const auto &s : sigs)
            submitted.push_back(s.first);

        Response resp;
        resp.name = name;
        std::string mismatch = describe_mismatch(name, sigs);
        std::vector<int> absent = missing(entry);
        const bool timed_out = timeout_.count() > 0 && now - entry.first_seen >= timeout_;
        bool waiting = false;
        // A disagreement is decided only once every rank that must take part has
        // submitted (or the time-out passed): a response goes to every rank by name, and
        // a rank that submits after it would find no entry, wait alone until the time-out
        // and blame the others, or, when they use the name again, take their next call
        // for its own and return DT_OK with another step's data.
        if (!mismatch.empty() && (absent.empty() || timed_out)) {
            resp.type = Response::Type::error;
            resp.status = DT_ERR_MISMATCH;
            resp.message = mismatch;
            if (!absent.empty())
                resp.message += cat("; ", ranks_phrase(absent), " did not submit it within "
                                    "DISTTRAIN_TIMEOUT (", timeout_.count() / 1000.0, " s)");
        } else if (!mismatch.empty()) {
            waiting = true; // for the ranks still to submit it, with the stall warnings
        } else if (sig.kind != OpKind::allreduce && !joined_.empty()) {
            resp.type = Response::Type::error;
            resp.status = DT_ERR_INVALID_STATE;
            resp.message = cat(op_kind_name(sig.kind), " '", name, "' cannot run while ",
                               ranks_phrase({joined_.begin(), joined_.end()}),
                               " joined; only allreduce continues after join");
        } else if (absent.empty()) {
            resp.type = Response::Type::ready;
            resp.sig = sig;
        } else if (timed_out) {
            resp.type = Response::Type::error;
            resp.status = DT_ERR_TIMEOUT;
            resp.message = cat(op_kind_name(sig.kind), " '", name, "' was submitted by ",
                               ranks_phrase(submitted), " but ", ranks_phrase(absent),
                               " did not submit it within DISTTRAIN_TIMEOUT (",
                               timeout_.count() / 1000.0,
                               " s); every rank must submit every named operation");
        } else {
            waiting = true;
        }
        if (waiting) {
            if (stall_warn_.count() > 0 && now - entry.last_warned >= stall_warn_) {
                entry.last_warned = now;
                auto waited = std::chrono::duration_cast<std::chrono::seconds>(
                    now - entry.first_seen);
                DT_LOG(warn, "stall", op_kind_name(sig.kind), " '", name,
                       "' submitted by ", ranks_phrase(submitted), " has waited ",
                       waited.count(), " s for ", ranks_phrase(absent),
                       ", which have not submitted it");
            }
            still_pending.push_back(name);
            continue;
        }
        list.responses.push_back(std::move(resp));
        entries_.erase(name);
    }
    order_ = std::move(still_pending);

    if (static_cast<int>(joined_.size()) == size_) {
        Response done;
        done.type = Response::Type::join_done;
        done.last_joined = last_joined_;
        list.responses.push_back(done);
        joined_.clear();
    }
    list.joined.assign(joined_.begin(), joined_.end());
    return list;
}

} // namespace dt

// SPDX-License-Identifier: Apache-2.0
#include "runtime/elastic_membership.h"

#include "runtime/env.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>

namespace dt {

namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// What an old rank's arrival adds to its state key (elastic_rendezvous): more than any
// number of lost reports can.
constexpr int64_t kArrived = int64_t{1} << 40;

std::string encode(const ElasticMember &m)
{
    return cat(m.old_rank, " ", m.launch_id, " ", m.host);
}

ElasticMember decode(const std::string &s)
{
    ElasticMember m;
    auto first = s.find(' ');
    auto second = first == std::string::npos ? first : s.find(' ', first + 1);
    if (second == std::string::npos)
        throw_error(DT_ERR_PROTOCOL, "malformed elastic arrival '", s, "'");
    m.old_rank = static_cast<int>(env::parse_int("elastic arrival", s.substr(0, first), -1,
                                                 INT32_MAX));
    m.launch_id = env::parse_int("elastic arrival", s.substr(first + 1, second - first - 1),
                                 -1, INT64_MAX);
    m.host = s.substr(second + 1);
    return m;
}

// A store that failed throws: only an absent key is false, so the loops polling with this
// stop at the store's first failure instead of meeting it again on every round.
bool exists(bootstrap::StoreClient &store, const std::string &key, std::string *value)
{
    std::optional<std::string> found = store.try_get(key, Millis{0});
    if (found)
        *value = std::move(*found);
    return found.has_value();
}

// A joiner leaves the wait once, whoever sees it first: the rank 0 that lets it in, the
// joiner giving up, or a rank reading its death notice. Without a launch id only the
// first two can, and each counts it.
void leave_waiting(bootstrap::StoreClient &store, const std::string &root, int64_t launch_id)
{
    if (launch_id < 0 || store.add(cat(root, "left/", launch_id), 1) == 1)
        store.add(root + "admitted", 1);
}

// Joiners among the newly dead (their registration names their launch id) leave the wait.
void retire_dead_joiners(bootstrap::StoreClient &store, const std::string &root,
                         const std::vector<int64_t> &fresh)
{
    std::string ignored;
    for (int64_t id : fresh)
        if (exists(store, cat(root, "joiner/", id), &ignored))
            leave_waiting(store, root, id);
}

// How long a rank waits for the close it saw claimed before it asks whether the closer
// died (a close takes three store round trips).
constexpr Millis kCloserGrace{100};

// An old rank that arrived in this epoch and is known dead since (it may be the closer).
bool arrived_member_died(bootstrap::StoreClient &store, const ElasticRendezvous &r,
                         const std::string &p)
{
    retire_dead_joiners(store, r.root, r.deaths->refresh());
    for (int i = 0; i < r.old_size; ++i)
        if (r.deaths->dead().count(r.old_ids[static_cast<size_t>(i)]) &&
            store.add(cat(p, "state/", i), 0) >= kArrived)
            return true;
    return false;
}

// A later epoch closed (root "epoch" past this one) while this one did not.
bool epoch_passed(bootstrap::StoreClient &store, const ElasticRendezvous &r)
{
    std::string last;
    return exists(store, r.root + "epoch", &last) &&
           env::parse_int("elastic epoch", last, 0, INT64_MAX) > static_cast<int64_t>(r.epoch);
}

// How long a rank past its deadline gives a close it saw claimed: the closer may be
// closing at its own deadline, a moment before this one's.
constexpr Millis kLateCloseGrace{1000};

// Where the launcher publishes deaths: whether an old rank that neither arrived nor is
// known dead was reported lost by none of the ranks that came. Such a rank is alive as
// far as anyone can tell (a long step, a slow data load, a process stuck in user code)
// and is waited for up to DISTTRAIN_TIMEOUT; one a rank reported lost (a broken link, or
// one that left to re-form first) only up to the settle time. The answer changes only
// when a rank arrives, is first reported or is known dead, so it is read again only then.
class UnreportedAbsence {
public:
    bool any(bootstrap::StoreClient &store, const ElasticRendezvous &r, const std::string &p,
             int64_t arrived)
    {
        auto key = std::make_tuple(arrived, store.add(p + "lost_total", 0),
                                   r.deaths->dead().size());
        if (key == key_)
            return any_;
        key_ = key;
        any_ = false;
        // The state key of an old rank: 0 until it is reported lost or arrives.
        for (int i = 0; i < r.old_size && !any_; ++i)
            any_ = !r.deaths->dead().count(r.old_ids[static_cast<size_t>(i)]) &&
                   store.add(cat(p, "state/", i), 0) == 0;
        return any_;
    }

private:
    std::optional<std::tuple<int64_t, int64_t, size_t>> key_;
    bool any_ = false;
};

Millis time_left(Clock::time_point deadline)
{
    return std::max(Millis{1}, std::chrono::duration_cast<Millis>(deadline - Clock::now()));
}

// A ticket's arrival record. Its rank may die between taking the ticket and writing it:
// where deaths are known, such a death sends the members to the next epoch, and a joiner
// moves on once they have met there; elsewhere DISTTRAIN_TIMEOUT ends the wait.
std::string read_arrival(bootstrap::StoreClient &store, const ElasticRendezvous &r,
                         const std::string &p, int ticket, bool vouched)
{
    const std::string key = cat(p, "arrival/", ticket);
    const bool newcomer = r.me.old_rank < 0;
    if (!vouched && !newcomer)
        return store.get(key, time_left(r.deadline));
    for (;;) {
        Millis left = time_left(r.deadline);
        if (left <= Millis{10})
            return store.get(key, left); // the last wait: its timeout names the key
        if (std::optional<std::string> arrival = store.try_get(key, Millis{10}))
            return std::move(*arrival);
        if (vouched && arrived_member_died(store, r, p))
            throw_error(DT_ERR_PEER_LOST, "a rank that arrived in re-form epoch ", r.epoch,
                        " died before it said who it is");
        if (newcomer && epoch_passed(store, r))
            throw_error(DT_ERR_INVALID_STATE, "re-form epoch ", r.epoch, " was given up");
    }
}

// The closer that gives up on live ranks at its deadline says so, here and to them.
void leave_out_absent(bootstrap::StoreClient &store, const ElasticRendezvous &r,
                      const std::string &p, int64_t size)
{
    DT_LOG(warn, "context", "re-form epoch ", r.epoch, " closes with ", size, " rank(s): ",
           "the job's other ranks are alive, as far as the launcher knows, but did not call ",
           "dt_context_reform within DISTTRAIN_TIMEOUT");
    store.set(p + "left_out",
              cat("the ", size, " rank(s) that re-formed waited DISTTRAIN_TIMEOUT for it to ",
                  "call dt_context_reform and went on without it; a rank that can spend ",
                  "longer between collectives (a long step, a data load) needs a larger ",
                  "DISTTRAIN_TIMEOUT"));
}

} // namespace

ElasticMembership number_members(const std::vector<ElasticMember> &arrivals, int my_ticket)
{
    std::vector<int> order(arrivals.size());
    std::iota(order.begin(), order.end(), 0);
    // Old ranks first, in their old order; newcomers after them, by ticket.
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        int ra = arrivals[a].old_rank, rb = arrivals[b].old_rank;
        if ((ra < 0) != (rb < 0))
            return rb < 0;
        return ra >= 0 && ra < rb;
    });
    ElasticMembership m;
    m.size = static_cast<int>(arrivals.size());
    for (int pos = 0; pos < m.size; ++pos) {
        const ElasticMember &who = arrivals[order[pos]];
        m.members.push_back(who);
        if (order[pos] == my_ticket)
            m.rank = pos;
    }
    const std::string &host = arrivals[my_ticket].host;
    m.local_size = 0;
    for (int pos = 0; pos < m.size; ++pos) {
        if (m.members[pos].host != host)
            continue;
        if (pos == m.rank)
            m.local_rank = m.local_size;
        ++m.local_size;
    }
    return m;
}

ElasticMembership elastic_rendezvous(bootstrap::StoreClient &store, const ElasticRendezvous &r)
{
    const std::string p = cat(r.root, r.epoch, "/");
    const bool newcomer = r.me.old_rank < 0;
    // A survivor may report a peer lost that only left to re-form (its connection closed
    // before the survivor stopped listening): that peer's arrival cancels the reports.
    // Per old rank, reports add 1 and the arrival adds kArrived: whichever order the
    // store applies them in, the first report counts the rank lost only if it came before
    // the arrival, and then the arrival uncounts it. The arrival goes before the ticket,
    // so no rank is counted both as arrived and as lost.
    if (!newcomer && store.add(cat(p, "state/", r.me.old_rank), kArrived) > kArrived)
        store.add(p + "lost_total", -1);
    const int ticket = static_cast<int>(store.add(p + "arrived", 1) - 1);
    store.set(cat(p, "arrival/", ticket), encode(r.me));
    // Counted after the ticket: a closer that counts this rank in has its ticket too. The
    // mark first: a rank that dies without either is counted as dead, never twice.
    if (!newcomer) {
        store.set(cat(p, "in/", r.me.old_rank), "1");
        store.add(p + "old_arrived", 1);
    }
    const bool vouched = !newcomer && r.deaths != nullptr && r.deaths->vouched() &&
                         static_cast<int>(r.old_ids.size()) == r.old_size;
    // Where the launcher vouches for deaths, its notices say who is gone: a report only
    // tells a rank that lost its link from one that is merely late (UnreportedAbsence).
    for (int lost : r.lost)
        if (store.add(cat(p, "state/", lost), 1) == 1)
            store.add(p + "lost_total", 1);

    std::string closed;
    int64_t seen = -1;
    auto changed_at = Clock::now();
    std::optional<Clock::time_point> claimed_at; // when another rank claimed the close
    UnreportedAbsence absence;
    while (!exists(store, p + "closed", &closed)) {
        auto now = Clock::now();
        if (claimed_at) {
            // The closer may die between its claim and the close: where deaths are known,
            // a member that arrived and died since is reason to meet in the next epoch
            // (only that closer could close this one). Elsewhere DISTTRAIN_TIMEOUT ends it.
            if (vouched && now - *claimed_at >= kCloserGrace &&
                arrived_member_died(store, r, p))
                throw_error(DT_ERR_PEER_LOST, "a rank that arrived in re-form epoch ",
                            r.epoch, " died before its membership closed");
        } else if (!newcomer) {
            int64_t arrived = store.add(p + "arrived", 0);
            if (arrived != seen) {
                seen = arrived;
                changed_at = now;
            }
            const bool settled = now - changed_at >= r.settle;
            bool may_close;
            if (vouched) {
                retire_dead_joiners(store, r.root, r.deaths->refresh());
                // Every old rank accounted for: arrived, or known dead. Read in this
                // order (the count, then the marks, which are set before the count), a
                // rank is counted at most once, at worst not yet.
                int64_t old_in = store.add(p + "old_arrived", 0);
                // The dead not counted in: never arrived, or arrived and died before
                // counting itself in.
                int64_t dead_out = 0;
                std::string mark;
                for (int i = 0; i < r.old_size; ++i)
                    if (r.deaths->dead().count(r.old_ids[static_cast<size_t>(i)]) &&
                        !exists(store, cat(p, "in/", i), &mark))
                        ++dead_out;
                const bool old_done = old_in + dead_out >= r.old_size;
                may_close = (old_done && arrived - old_in >= waiting_joiners(store, r.root)) ||
                            (settled && (old_done || !absence.any(store, r, p, arrived)));
            } else {
                int64_t alive = r.old_size - store.add(p + "lost_total", 0);
                may_close = arrived >= std::max<int64_t>(alive, 1) +
                                           waiting_joiners(store, r.root) ||
                            settled;
            }
            // Past the deadline, where deaths are known, the ranks that came go on without
            // the live ones that did not.
            const bool give_up = !may_close && vouched && now >= r.deadline;
            if (arrived >= r.min_size && (may_close || give_up)) {
                if (store.add(p + "closer", 1) == 1) {
                    // A rank that finds this epoch closed without it learns why (first).
                    // Then the epoch: a joiner that finds this one closed goes on to the
                    // next. Read the count again: a rank that took a ticket since is in.
                    int64_t size = store.add(p + "arrived", 0);
                    if (give_up)
                        leave_out_absent(store, r, p, size);
                    store.set(r.root + "epoch", std::to_string(r.epoch));
                    store.set(p + "closed", std::to_string(size));
                    continue;
                }
                claimed_at = now; // the closer's value is the one every rank takes
            }
        } else if (epoch_passed(store, r)) {
            // The ranks met in a later epoch without closing this one (its closer died).
            throw_error(DT_ERR_INVALID_STATE, "re-form epoch ", r.epoch, " was given up");
        }
        if (now >= r.deadline && !(claimed_at && now - *claimed_at < kLateCloseGrace)) {
            if (newcomer)
                throw_error(DT_ERR_TIMEOUT, "no re-form of the running job let this rank in "
                            "before DISTTRAIN_TIMEOUT; its ranks let joiners in when they "
                            "call dt_context_poll_joiners at a step boundary");
            throw_error(DT_ERR_TIMEOUT, "the job could not re-form: ", seen,
                        " rank(s) arrived before DISTTRAIN_TIMEOUT, and it needs at least ",
                        r.min_size, " (DISTTRAIN_MIN_SIZE)",
                        claimed_at ? "; the membership was never closed" : "");
        }
        std::this_thread::sleep_for(Millis{2});
    }

    const int size = static_cast<int>(env::parse_int("elastic membership", closed, 1, INT32_MAX));
    std::string why;
    if (ticket >= size && !newcomer && exists(store, p + "left_out", &why))
        throw_error(DT_ERR_INVALID_STATE, "the job re-formed without this rank: ", why);
    if (ticket >= size)
        throw_error(DT_ERR_INVALID_STATE, "the job re-formed without this rank (it arrived "
                    "after the ", size, " that make up the new job)");
    std::vector<ElasticMember> arrivals;
    for (int t = 0; t < size; ++t)
        arrivals.push_back(decode(read_arrival(store, r, p, t, vouched)));
    ElasticMembership m = number_members(arrivals, ticket);
    // The new rank 0 counts the joiners let in, before any rank can ask how many wait.
    if (m.rank == 0)
        for (const ElasticMember &a : arrivals)
            if (a.old_rank < 0)
                leave_waiting(store, r.root, a.launch_id);
    return m;
}

namespace {
// The joiner's tries, each in the re-form after the last one that closed.
std::pair<ElasticMembership, uint64_t> join_next_reform(bootstrap::StoreClient &store,
                                                        ElasticRendezvous &r);
} // namespace

std::pair<ElasticMembership, uint64_t> elastic_join(bootstrap::StoreClient &store,
                                                    ElasticRendezvous r)
{
    r.me.old_rank = -1;
    store.add(r.root + "joiners", 1);
    // After the count: a rank that reads this joiner's death notice finds it registered,
    // and so counted.
    if (r.me.launch_id >= 0)
        store.set(cat(r.root, "joiner/", r.me.launch_id), "waiting");
    try {
        return join_next_reform(store, r);
    } catch (const Error &) {
        // Giving up (DISTTRAIN_TIMEOUT, a store error): no longer waiting, so that the
        // job's ranks stop re-forming for a joiner that will never come.
        try {
            leave_waiting(store, r.root, r.me.launch_id);
        } catch (const Error &) {
            // The store is gone too: nobody is left to count on it.
        }
        throw;
    }
}

namespace {

std::pair<ElasticMembership, uint64_t> join_next_reform(bootstrap::StoreClient &store,
                                                        ElasticRendezvous &r)
{
    for (;;) {
        std::string last;
        r.epoch = (exists(store, r.root + "epoch", &last)
                       ? static_cast<uint64_t>(env::parse_int("elastic epoch", last, 0,
                                                              INT64_MAX))
                       : 0) +
                  1;
        try {
            return {elastic_rendezvous(store, r), r.epoch};
        } catch (const Error &e) {
            if (e.status() != DT_ERR_INVALID_STATE)
                throw;
            // That re-form closed before this rank arrived: wait in the next one.
        }
    }
}

} // namespace

int64_t waiting_joiners(bootstrap::StoreClient &store, const std::string &root,
                        DeathNotices *deaths)
{
    if (deaths != nullptr)
        retire_dead_joiners(store, root, deaths->refresh());
    // Read apart, the two counters may cross for a moment (a joiner giving up while
    // rank 0 counts it in): never fewer than none.
    return std::max<int64_t>(0, store.add(root + "joiners", 0) - store.add(root + "admitted", 0));
}

} // namespace dt

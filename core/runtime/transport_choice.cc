// SPDX-License-Identifier: Apache-2.0
#include "runtime/transport_choice.h"

#include "runtime/error.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace dt {

namespace {

using Millis = std::chrono::milliseconds;

// How often a waiting rank looks for an abandon notice: a store round trip each, and the
// delay a rank that moved on can cost the others.
constexpr Millis kPollSlice{50};

// How long past the deadline the ranks wait for rank 0's verdict on a transport.
constexpr Millis kVerdictGrace{2000};

Millis left(TransportChoice::Clock::time_point deadline)
{
    auto ms = std::chrono::duration_cast<Millis>(deadline - TransportChoice::Clock::now());
    return std::max(ms, Millis{0});
}

std::string join(const std::vector<std::string> &names)
{
    std::string out;
    for (const auto &n : names)
        out += (out.empty() ? "" : ",") + n;
    return out;
}

std::vector<std::string> split(const std::string &list)
{
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string name; std::getline(in, name, ',');)
        if (!name.empty())
            out.push_back(name);
    return out;
}

} // namespace

TransportChoice::TransportChoice(bootstrap::StoreClient &store, std::string prefix, int rank,
                                 int size, Clock::time_point deadline)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), size_(size), deadline_(deadline)
{
}

std::vector<std::string> TransportChoice::candidates(const std::vector<std::string> &mine)
{
    const std::string key = prefix_ + "transport/candidates";
    if (rank_ == 0) {
        store_.set(key, join(mine));
        return mine;
    }
    // Rank 0 publishes them before it tries any: an abandon notice of this rank's first
    // choice while waiting means the job gave up (a member died), not a failed start.
    try {
        return split(get_unless_abandoned(store_, key, abandon_key(mine.front()), deadline_));
    } catch (const Error &e) {
        if (e.status() != DT_ERR_TIMEOUT || store_.lost())
            throw; // a store that fell silent says so itself
        throw_error(DT_ERR_TIMEOUT, "rank 0 did not publish its transport candidates "
                    "before DISTTRAIN_TIMEOUT");
    }
}

std::string TransportChoice::abandon_key(const std::string &name) const
{
    return abandon_key_in(prefix_, name);
}

std::string TransportChoice::abandon_key_in(const std::string &prefix, const std::string &name)
{
    return prefix + "transport/" + name + "/abandoned";
}

void TransportChoice::abandon(const std::string &name, const std::string &reason)
{
    if (abandoned(name))
        return;
    store_.set(abandon_key(name), cat("rank ", rank_, " could not start it: ", reason));
}

std::optional<std::string> TransportChoice::abandoned(const std::string &name)
{
    return store_.try_get(abandon_key(name), Millis{0});
}

// Rank 0 alone says whether `name` is chosen. Were every rank to decide by its own count,
// a rank whose deadline passed just before the last start would give the transport up
// while a later one saw every start and went on with it: one rank in a job the others
// have left. The verdict key holds "ok", or the status and the reason for all.
void TransportChoice::confirm_started(const std::string &name)
{
    const std::string base = prefix_ + "transport/" + name + "/";
    int64_t count = store_.add(base + "started", 1);
    if (rank_ != 0) {
        // Rank 0 decides by the deadline; the grace covers its last poll and the store's
        // round trip (a rank 0 that is gone fails the store call itself). A rank 0 whose
        // own start failed because the job gave the transport up (a member died while it
        // connected: member_death_watch.h) says nothing: the abandon notice is the answer.
        const Clock::time_point until = deadline_ + kVerdictGrace;
        std::optional<std::string> verdict;
        while (!(verdict = store_.try_get(base + "verdict", std::min(kPollSlice, left(until))))) {
            if (auto why = abandoned(name))
                throw_error(DT_ERR_CONNECT, "transport '", name, "' was given up: ", *why);
            if (Clock::now() >= until)
                throw_error(DT_ERR_TIMEOUT, "rank 0 did not say whether transport '", name,
                            "' started on every rank before DISTTRAIN_TIMEOUT");
        }
        if (*verdict == "ok")
            return;
        const bool timed_out = verdict->rfind("timeout:", 0) == 0;
        throw_error(timed_out ? DT_ERR_TIMEOUT : DT_ERR_CONNECT, "transport '", name, "' ",
                    verdict->substr(verdict->find(':') + 1));
    }
    for (;;) {
        if (count >= size_) {
            store_.set(base + "verdict", "ok");
            return;
        }
        if (auto why = abandoned(name)) {
            store_.set(base + "verdict", "connect:was given up: " + *why);
            throw_error(DT_ERR_CONNECT, "transport '", name, "' was given up: ", *why);
        }
        if (Clock::now() >= deadline_) {
            std::string why = cat("started on ", count, " of ", size_,
                                  " ranks before DISTTRAIN_TIMEOUT");
            store_.set(base + "verdict", "timeout:" + why);
            throw_error(DT_ERR_TIMEOUT, "transport '", name, "' ", why);
        }
        std::this_thread::sleep_for(std::min(Millis{5}, left(deadline_)));
        count = store_.add(base + "started", 0);
    }
}

std::string get_unless_abandoned(bootstrap::StoreClient &store, const std::string &key,
                                 const std::string &abandon_key,
                                 TransportChoice::Clock::time_point deadline,
                                 std::string *notice)
{
    // A store that failed throws from either read: only an absent key is waited for again.
    for (;;) {
        if (auto value = store.try_get(key, std::min(kPollSlice, left(deadline))))
            return *value;
        if (auto why = store.try_get(abandon_key, Millis{0})) {
            if (notice != nullptr)
                *notice = *why;
            throw_error(DT_ERR_CONNECT, "given up while waiting for '", key, "': ", *why);
        }
        if (TransportChoice::Clock::now() >= deadline)
            throw_error(DT_ERR_TIMEOUT, "store key '", key, "' did not appear before "
                        "DISTTRAIN_TIMEOUT");
    }
}

dt_status_t no_transport_status(const std::vector<dt_status_t> &failures)
{
    for (dt_status_t s : failures)
        if (DT_IS_USAGE_ERROR(s))
            return s;
    for (dt_status_t s : failures)
        if (!DT_IS_PLUGIN_ERROR(s))
            return s;
    return DT_ERR_PLUGIN_NOT_FOUND;
}

} // namespace dt

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

// store.get that waits at most `wait` and says "not there" instead of throwing.
std::optional<std::string> try_get(bootstrap::StoreClient &store, const std::string &key,
                                   Millis wait)
{
    try {
        return store.get(key, wait);
    } catch (const Error &e) {
        if (e.status() != DT_ERR_TIMEOUT)
            throw;
        return std::nullopt;
    }
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
        if (e.status() != DT_ERR_TIMEOUT)
            throw;
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
    return try_get(store_, abandon_key(name), Millis{0});
}

void TransportChoice::confirm_started(const std::string &name)
{
    const std::string started = prefix_ + "transport/" + name + "/started";
    int64_t count = store_.add(started, 1);
    while (count < size_) {
        if (auto why = abandoned(name))
            throw_error(DT_ERR_CONNECT, "transport '", name, "' was given up: ", *why);
        if (Clock::now() >= deadline_)
            throw_error(DT_ERR_TIMEOUT, "transport '", name, "' started on ", count, " of ",
                        size_, " ranks before DISTTRAIN_TIMEOUT");
        std::this_thread::sleep_for(std::min(Millis{5}, left(deadline_)));
        count = store_.add(started, 0);
    }
}

std::string get_unless_abandoned(bootstrap::StoreClient &store, const std::string &key,
                                 const std::string &abandon_key,
                                 TransportChoice::Clock::time_point deadline)
{
    for (;;) {
        if (auto value = try_get(store, key, std::min(kPollSlice, left(deadline))))
            return *value;
        if (auto why = try_get(store, abandon_key, Millis{0}))
            throw_error(DT_ERR_CONNECT, "given up while waiting for '", key, "': ", *why);
        if (TransportChoice::Clock::now() >= deadline)
            throw_error(DT_ERR_TIMEOUT, "store key '", key, "' did not appear before "
                        "DISTTRAIN_TIMEOUT");
    }
}

} // namespace dt

// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/store_state.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <limits>

namespace dt::bootstrap {

namespace {
constexpr auto kAbandonCheck = std::chrono::milliseconds(200);
}

template <typename Ready>
bool StoreState::wait_until(std::unique_lock<std::mutex> &lock, const Deadline &deadline,
                            const Abandon &abandon, Ready ready)
{
    for (;;) {
        if (ready())
            return true;
        if (stopped_ || deadline.expired() || (abandon && abandon()))
            return false;
        auto slice = Deadline::Clock::now() + kAbandonCheck;
        if (auto at = deadline.at(); at && *at < slice)
            slice = *at;
        changed_.wait_until(lock, slice);
    }
}

void StoreState::set(std::string key, std::string value)
{
    {
        std::lock_guard lock(mu_);
        map_.insert_or_assign(std::move(key), std::move(value));
    }
    changed_.notify_all();
}

std::optional<std::string> StoreState::get(const std::string &key, const Deadline &deadline,
                                           const Abandon &abandon)
{
    std::unique_lock lock(mu_);
    auto it = map_.end();
    bool found = wait_until(lock, deadline, abandon, [&] {
        it = map_.find(key);
        return it != map_.end();
    });
    if (!found)
        return std::nullopt;
    return it->second;
}

int64_t StoreState::add(const std::string &key, int64_t delta)
{
    int64_t sum = 0;
    {
        std::lock_guard lock(mu_);
        std::string &slot = map_[key];
        int64_t current = 0;
        if (!slot.empty()) {
            try {
                current = env::parse_int(cat("store key '", key, "'"), slot,
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max());
            } catch (const Error &) {
                throw_error(DT_ERR_STORE, "cannot add to store key '", key,
                            "': its value is not a decimal 64-bit integer; a key used as a "
                            "counter must only be changed with add()");
            }
        }
        if (__builtin_add_overflow(current, delta, &sum))
            throw_error(DT_ERR_STORE, "adding ", delta, " to store key '", key, "' (", current,
                        ") overflows a 64-bit integer");
        slot = std::to_string(sum);
    }
    changed_.notify_all();
    return sum;
}

std::vector<std::string> StoreState::wait(const std::vector<std::string> &keys,
                                          const Deadline &deadline, const Abandon &abandon)
{
    std::unique_lock lock(mu_);
    auto all_present = [&] {
        for (const auto &k : keys)
            if (!map_.count(k))
                return false;
        return true;
    };
    if (wait_until(lock, deadline, abandon, all_present))
        return {};
    std::vector<std::string> missing;
    for (const auto &k : keys)
        if (!map_.count(k))
            missing.push_back(k);
    return missing;
}

void StoreState::shutdown()
{
    {
        std::lock_guard lock(mu_);
        stopped_ = true;
    }
    changed_.notify_all();
}

} // namespace dt::bootstrap

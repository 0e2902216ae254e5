// SPDX-License-Identifier: Apache-2.0
#include "runtime/death_notices.h"

#include "runtime/env.h"
#include "runtime/error.h"

namespace dt {

namespace {

using Millis = std::chrono::milliseconds;

// Outside every context's namespace ("ctx<id>/..."): the launcher knows no contexts.
const char *const kWatchedKey = "launch/deaths_published";
const char *const kCountKey = "launch/deaths";
std::string notice_key(int64_t index) { return cat("launch/dead/", index); }

} // namespace

DeathPublisher::DeathPublisher(bootstrap::StoreClient &store) : store_(store)
{
    store_.set(kWatchedKey, "1");
}

void DeathPublisher::publish(int64_t launch_id)
{
    // The notice before the count: a reader that sees the count finds the notice.
    store_.set(notice_key(count_), std::to_string(launch_id));
    ++count_;
    store_.add(kCountKey, 1);
}

DeathNotices::DeathNotices(bootstrap::StoreClient &store) : store_(store)
{
    vouched_ = store_.try_get(kWatchedKey, Millis{0}).has_value();
}

std::vector<int64_t> DeathNotices::refresh()
{
    std::vector<int64_t> fresh;
    if (!vouched_)
        return fresh;
    int64_t count = store_.add(kCountKey, 0);
    for (; seen_ < count; ++seen_) {
        // Written before the count went up: there already, the wait only bounds a fault.
        int64_t id = env::parse_int("death notice", store_.get(notice_key(seen_), Millis{1000}),
                                    0, INT64_MAX);
        if (dead_.insert(id).second)
            fresh.push_back(id);
    }
    return fresh;
}

} // namespace dt

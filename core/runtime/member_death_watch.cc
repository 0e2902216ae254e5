// SPDX-License-Identifier: Apache-2.0
#include "runtime/member_death_watch.h"

#include "bootstrap/store.h"
#include "runtime/death_notices.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>

namespace dt {

namespace {
// A store round trip per poll; a member's death costs the others at most this much more.
constexpr std::chrono::milliseconds kPoll{5};
// The watch's own store connection: each round trip is local and short.
constexpr std::chrono::milliseconds kStoreTimeout{5000};
} // namespace

MemberDeathWatch::MemberDeathWatch(const std::string &store_addr, const bootstrap::Auth &auth,
                                   std::vector<int64_t> member_ids,
                                   std::vector<std::string> abandon_keys)
    : member_ids_(std::move(member_ids)), abandon_keys_(std::move(abandon_keys))
{
    thread_ = std::thread([this, store_addr, auth] { run(store_addr, auth); });
}

MemberDeathWatch::~MemberDeathWatch()
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join(); // a connected membership must not wait out a poll
}

std::optional<std::string> MemberDeathWatch::fired() const
{
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
}

void MemberDeathWatch::run(const std::string &store_addr, const bootstrap::Auth &auth)
{
    try {
        bootstrap::StoreClient store(store_addr, auth, kStoreTimeout);
        DeathNotices notices(store);
        for (;;) {
            for (int64_t id : notices.refresh()) {
                auto it = std::find(member_ids_.begin(), member_ids_.end(), id);
                if (it == member_ids_.end())
                    continue;
                std::string why = cat("rank ", it - member_ids_.begin(), " (launch id ", id,
                                      ") died while the re-formed job connected");
                for (const std::string &key : abandon_keys_)
                    store.set(key, why);
                std::lock_guard<std::mutex> lock(mu_);
                fired_ = why;
                return;
            }
            std::unique_lock<std::mutex> lock(mu_);
            if (wake_.wait_for(lock, kPoll, [this] { return stop_; }))
                return;
        }
    } catch (const Error &e) {
        // The store is gone: the connection's own waits will say so.
        DT_LOG(debug, "context", "the watch for members' deaths ended: ", e.what());
    }
}

} // namespace dt

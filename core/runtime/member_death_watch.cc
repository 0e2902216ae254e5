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
} // namespace

MemberDeathWatch::MemberDeathWatch(bootstrap::StoreClient &store, DeathNotices &notices,
                                   std::vector<int64_t> member_ids,
                                   std::vector<std::string> abandon_keys)
    : store_(store), notices_(notices), member_ids_(std::move(member_ids)),
      abandon_keys_(std::move(abandon_keys))
{
    thread_ = std::thread([this] { run(); });
}

MemberDeathWatch::~MemberDeathWatch()
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        quit_ = true;
    }
    wake_.notify_all();
    thread_.join(); // a connected membership must not wait out a poll
}

std::optional<std::string> MemberDeathWatch::fired() const
{
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
}

void MemberDeathWatch::run()
{
    try {
        for (;;) {
            notices_.refresh();
            // All the dead, not only the new: a member may have died before the watch began.
            for (auto it = member_ids_.begin(); it != member_ids_.end(); ++it) {
                int64_t id = *it;
                if (!notices_.dead().count(id))
                    continue;
                std::string why = cat("rank ", it - member_ids_.begin(), " (launch id ", id,
                                      ") died while the re-formed job connected");
                for (const std::string &key : abandon_keys_)
                    store_.set(key, why);
                std::lock_guard<std::mutex> lock(mu_);
                fired_ = why;
                return;
            }
            std::unique_lock<std::mutex> lock(mu_);
            if (wake_.wait_for(lock, kPoll, [this] { return quit_; }))
                return;
        }
    } catch (const Error &e) {
        // The store is gone: the connection's own waits will say so.
        DT_LOG(debug, "context", "the watch for members' deaths ended: ", e.what());
    }
}

} // namespace dt

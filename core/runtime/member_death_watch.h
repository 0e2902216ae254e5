/* SPDX-License-Identifier: Apache-2.0 */
// While a re-formed membership connects: a thread that reads the launcher's death
// notices (death_notices.h) and, once a member has died, writes the abandon keys of the
// connection set-up (transport_choice.h), so that every member's waits give up at once
// and the re-form meets again without it, instead of waiting out DISTTRAIN_TIMEOUT.
#pragma once

#include "bootstrap/store.h"
#include "runtime/death_notices.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dt {

class MemberDeathWatch {
public:
    // member_ids: the launch ids of the membership, in rank order. store and notices are
    // the watch's own (the context's client is used by the thread that connects), kept
    // by the context from one re-form to the next and used by nothing else meanwhile.
    MemberDeathWatch(bootstrap::StoreClient &store, DeathNotices &notices,
                     std::vector<int64_t> member_ids, std::vector<std::string> abandon_keys);
    ~MemberDeathWatch(); // ends the thread (within one poll)
    MemberDeathWatch(const MemberDeathWatch &) = delete;
    MemberDeathWatch &operator=(const MemberDeathWatch &) = delete;

    // Why the connection was abandoned ("rank 2 died ..."), once a member died.
    std::optional<std::string> fired() const;

private:
    void run();

    bootstrap::StoreClient &store_;
    DeathNotices &notices_;

    std::vector<int64_t> member_ids_;
    std::vector<std::string> abandon_keys_;
    mutable std::mutex mu_;
    std::condition_variable wake_; // ends the pause between polls at once
    bool quit_ = false;
    std::optional<std::string> fired_;
    std::thread thread_;
};

} // namespace dt

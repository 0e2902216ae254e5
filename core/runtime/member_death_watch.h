/* SPDX-License-Identifier: Apache-2.0 */
// While a re-formed membership connects: a thread that reads the launcher's death
// notices (death_notices.h) and, once a member has died, writes the abandon keys of the
// connection set-up (transport_choice.h), so that every member's waits give up at once
// and the re-form meets again without it, instead of waiting out DISTTRAIN_TIMEOUT.
#pragma once

#include "bootstrap/auth.h"

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
    // member_ids: the launch ids of the membership, in rank order. Connects its own store
    // client (the context's is used by the thread that connects).
    MemberDeathWatch(const std::string &store_addr, const bootstrap::Auth &auth,
                     std::vector<int64_t> member_ids, std::vector<std::string> abandon_keys);
    ~MemberDeathWatch(); // stops the thread (within one poll)
    MemberDeathWatch(const MemberDeathWatch &) = delete;
    MemberDeathWatch &operator=(const MemberDeathWatch &) = delete;

    // Why the connection was abandoned ("rank 2 died ..."), once a member died.
    std::optional<std::string> fired() const;

private:
    void run(const std::string &store_addr, const bootstrap::Auth &auth);

    std::vector<int64_t> member_ids_;
    std::vector<std::string> abandon_keys_;
    mutable std::mutex mu_;
    std::condition_variable wake_; // stops the pause between polls at once
    bool stop_ = false;
    std::optional<std::string> fired_;
    std::thread thread_;
};

} // namespace dt

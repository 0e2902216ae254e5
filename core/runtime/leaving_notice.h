/* SPDX-License-Identifier: Apache-2.0 */
// What a rank tells its peers as its engine stops (Engine::loop, sent on the control
// tag by Engine::notify_peers). The status says what the peers may still expect of it:
// DT_OK means every call it made completed, so a peer still finishing a transport's
// native collective with it lets that collective complete (MPI may finish it on one rank
// well after the others); any other status ends such a wait at once.
#pragma once

#include <disttrain/disttrain.h>

#include <optional>
#include <string>
#include <utility>

namespace dt {

struct LeavingNotice {
    bool send = false; // false: the peers were told already (the failure hook)
    dt_status_t status = DT_OK;
    std::string text;
};

// rank: this rank. error: why its context broke, if it did. departure_only: the only
// cause is that a peer left (its transport is healthy). calls_failed: a call of this
// rank failed or was refused since the context broke. notified: a notice went already.
LeavingNotice leaving_notice(int rank,
                             const std::optional<std::pair<dt_status_t, std::string>> &error,
                             bool departure_only, bool calls_failed, bool notified);

} // namespace dt

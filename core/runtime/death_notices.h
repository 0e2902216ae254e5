/* SPDX-License-Identifier: Apache-2.0 */
// Deaths of a job's processes, as the launcher that serves the store saw them. In an
// elastic job disttrainrun reaps every process it started (waitpid) and writes each
// death into its store at once; the ranks read those notices so that a re-form need not
// guess who is gone (no settle wait) and a re-formed membership that lost a member
// while it connected fails over at once instead of waiting out DISTTRAIN_TIMEOUT.
//
// Each process the launcher starts has a launch id (DISTTRAIN_LAUNCH_ID): the first
// ranks have their rank, every later process (a replacement, a new rank) a new number.
// A store served elsewhere carries no notices: the ranks then settle and time out as
// before (vouched() is false).
#pragma once

#include "bootstrap/store.h"

#include <cstdint>
#include <set>
#include <vector>

namespace dt {

// The launcher's side.
class DeathPublisher {
public:
    // Says in the store that deaths are published (before any rank starts).
    explicit DeathPublisher(bootstrap::StoreClient &store);
    // The process with this launch id has ended badly (a signal or a non-zero exit).
    void publish(int64_t launch_id);

private:
    bootstrap::StoreClient &store_;
    int64_t count_ = 0;
};

// A rank's side: reads the notices as they come, one store round trip when none is new.
class DeathNotices {
public:
    explicit DeathNotices(bootstrap::StoreClient &store);
    // Whether a launcher publishes deaths in this store.
    bool vouched() const { return vouched_; }
    // Reads the notices published since the last call; returns the ones new to it.
    std::vector<int64_t> refresh();
    const std::set<int64_t> &dead() const { return dead_; }

private:
    bootstrap::StoreClient &store_;
    bool vouched_ = false;
    int64_t seen_ = 0;
    std::set<int64_t> dead_;
};

} // namespace dt

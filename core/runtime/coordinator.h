/* SPDX-License-Identifier: Apache-2.0 */
// The coordinator's table (rank 0): which ranks have submitted which named operation.
// An operation is ready when every rank that must take part has submitted it; it is an
// error when they disagree on its signature or when some never submit it within the
// timeout. Pure logic, no I/O: the engine feeds it records and sends what it decides.
#pragma once

#include "runtime/negotiation.h"

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dt {

class Coordinator {
public:
    using Clock = std::chrono::steady_clock;
    // members(group) lists the ranks of a group (group 0: every rank) that this rank
    // knows; the members of other groups come with their records.
    Coordinator(int size, std::chrono::milliseconds timeout,
                std::chrono::milliseconds stall_warn,
                std::function<std::vector<int>(uint32_t)> members);

    void add(int rank, const Record &record, Clock::time_point now);

    // Ready operations (oldest first), errors, and join completion. Also logs stall
    // warnings for operations waiting longer than stall_warn.
    ResponseList decide(Clock::time_point now);

    bool has_pending() const { return !order_.empty(); }
    const std::set<int> &joined() const { return joined_; }

private:
    struct Entry {
        std::map<int, Signature> by_rank;
        Clock::time_point first_seen; // when the earliest rank began waiting for it
        Clock::time_point last_warned;
    };

    // Ranks that must submit `sig` before it runs, and those that never will (joined).
    std::vector<int> required(const Signature &sig) const;
    std::vector<int> missing(const Entry &entry) const;

    int size_;
    std::chrono::milliseconds timeout_;
    std::chrono::milliseconds stall_warn_;
    std::function<std::vector<int>(uint32_t)> members_;
    std::map<std::string, Entry> entries_;
    std::vector<std::string> order_; // names by first submission
    std::map<uint32_t, std::vector<int>> groups_; // learned from records
    std::set<int> joined_;
    int last_joined_ = -1;
};

} // namespace dt

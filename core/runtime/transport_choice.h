/* SPDX-License-Identifier: Apache-2.0 */
// Choosing the host transport together. Every rank tries the same candidates in the same
// order (rank 0's, after "auto" is expanded there: hosts may have different plugins
// installed), and a rank that cannot start one says so in the store. The others then give
// that candidate up at once, instead of waiting out DISTTRAIN_TIMEOUT for a peer that has
// moved on, and a candidate only counts as chosen once every rank has started it.
#pragma once

#include "bootstrap/store.h"

#include <disttrain/disttrain.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dt {

class TransportChoice {
public:
    using Clock = std::chrono::steady_clock;

    // prefix keeps this context's keys apart; deadline bounds every wait.
    TransportChoice(bootstrap::StoreClient &store, std::string prefix, int rank, int size,
                    Clock::time_point deadline);

    // Rank 0 publishes its candidates, the others adopt them.
    std::vector<std::string> candidates(const std::vector<std::string> &mine);

    // The key whose presence means some rank gave candidate `name` up.
    std::string abandon_key(const std::string &name) const;
    // The same, for the choice made under prefix (a member death watch writes it).
    static std::string abandon_key_in(const std::string &prefix, const std::string &name);
    // Tells the others this rank gives `name` up, unless one already did (the first
    // reason is the one worth reading).
    void abandon(const std::string &name, const std::string &reason);
    // Why `name` was given up, if it was.
    std::optional<std::string> abandoned(const std::string &name);

    // After this rank started `name`: returns once every rank has, as rank 0 saw it (one
    // verdict for all). Throws DT_ERR_CONNECT naming the reason when a rank gave it up
    // (or the job did: a member died), DT_ERR_TIMEOUT when rank 0's deadline passed first.
    void confirm_started(const std::string &name);

    Clock::time_point deadline() const { return deadline_; }

private:
    bootstrap::StoreClient &store_;
    std::string prefix_;
    int rank_;
    int size_;
    Clock::time_point deadline_;
};

// store->get(key) that also gives up when abandon_key appears (DT_ERR_CONNECT with the
// reason stored there, also written to *notice when given) or deadline passes
// (DT_ERR_TIMEOUT naming the key). A store that fails ends it with the store's error.
std::string get_unless_abandoned(bootstrap::StoreClient &store, const std::string &key,
                                 const std::string &abandon_key,
                                 TransportChoice::Clock::time_point deadline,
                                 std::string *notice = nullptr);

// The status of a creation none of whose candidate transports started, from their
// failures in the order tried (the rule dt_context_create documents): the first usage
// error (a bad variable or param, which is the fix whatever else failed); else the first
// failure of a transport that was loaded but did not start; else DT_ERR_PLUGIN_NOT_FOUND
// (none could be found, loaded or negotiated, or none was tried).
dt_status_t no_transport_status(const std::vector<dt_status_t> &failures);

} // namespace dt

/* SPDX-License-Identifier: Apache-2.0 */
// Which of a job's processes have joined it, as the launcher that serves the store sees
// them. A rank that exits, even with code 0, before it joined leaves the others waiting in
// the rendezvous for it until DISTTRAIN_TIMEOUT; disttrainrun sees the exit (waitpid) but
// only the store can tell it whether the rank had joined. So each rank says so in the
// store as it opens it, and the launcher, at a rank's clean exit, fails the job at once
// when that rank never joined while another did.
#pragma once

#include "bootstrap/store.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dt {

// A rank's side: this process, which the launcher started as launcher_rank, has joined.
void announce_joined(bootstrap::StoreClient &store, int launcher_rank);

// The launcher's side, one store round trip each.
bool has_joined(bootstrap::StoreClient &store, int launcher_rank);
int64_t joined_count(bootstrap::StoreClient &store);
// The launcher: the rank exited with this code (or 128 + signal) before it joined.
void announce_exit(bootstrap::StoreClient &store, int launcher_rank, int code);

// A rank waiting in the rendezvous for launcher_rank: its exit code if the launcher said
// that it exited before it joined; one store round trip.
std::optional<std::string> exited_before_joining(bootstrap::StoreClient &store,
                                                 int launcher_rank);

} // namespace dt

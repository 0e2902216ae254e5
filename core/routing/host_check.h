/* SPDX-License-Identifier: Apache-2.0 */
// Ordered mode's call check as a collective of its own, for the calls whose data moves
// cannot carry it to every rank: a device transport's (it has no control traffic), a
// broadcast's (the root receives nothing, and a rank that only hears from one peer could
// finish before another finds a disagreement), a call with no elements (nothing is sent).
#pragma once

#include "routing/path.h"

namespace dt::routing {

// A two-word MAX allreduce of {h, ~h} (h: the hash of this rank's call check) on the host
// paths, which carry the call's check themselves (a disagreeing rank fails it there with
// the field named). {max h, ~min h} equals {h, ~h} on every rank only when every rank's
// hash is the same, so the comparison after it fails every rank when any disagrees,
// which a path that carries only the hash to some peers would let through. Fails the
// collective with DT_ERR_MISMATCH (comm.fail_collective) on disagreement.
void check_over_host(const Services &s, algo::Comm &comm, const Args &a);

// Ordered mode, before a point-to-point path runs a call among members that all share
// this host: a shared-memory barrier that publishes this call's check. A rank whose
// disagreeing call shared memory took waits there for its peers' tag lines, not for
// their messages, so without it the two would wait for each other until the time-out.
// Fails the collective with DT_ERR_MISMATCH, naming both calls, on disagreement.
void check_on_this_host(const Services &s, algo::Comm &comm, const Args &a);

} // namespace dt::routing

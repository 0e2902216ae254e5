/* SPDX-License-Identifier: Apache-2.0 */
// The ordered candidate paths of each collective kind (table.cc) and the test that picks
// one: the memory question first (can the path touch the call's buffers, and does the
// transport it runs over accept them?), then the path's own applies().
#pragma once

#include "routing/path.h"

#include <span>

namespace dt::routing {

// Empty for join, which never runs as a collective.
std::span<const Path *const> paths_for(OpKind kind) noexcept;

// Whether path may run the call: it and its carrier accept the call's memory, and it
// applies().
bool applies_to(const Path &path, const Call &call, const Topology &topology,
                const Policy &policy) noexcept;

// Whether some path of the kind's table can touch memory at all, whatever the topology:
// false means the call cannot run in this build, which is the caller's error to hear.
bool accepts_memory(OpKind kind, Memory memory) noexcept;

// The table's first path that applies to the call (what runs unless it declines at run
// time), or null for join.
const Path *choose(const Call &call, const Topology &topology, const Policy &policy) noexcept;

} // namespace dt::routing

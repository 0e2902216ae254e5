/* SPDX-License-Identifier: Apache-2.0 */
// What /proc says of the launcher and of what its ranks left behind: the descriptors it
// holds (to size the advice when it runs out of them) and which of its ranks' process
// groups still hold live processes (to end a job's leftovers, as Slurm ends a step's).
#pragma once

#include <sys/types.h>

#include <set>
#include <vector>

namespace dt::launch {

// The descriptors this process holds open; 0 without /proc.
long open_descriptors();

// The process groups, among pgids, that still hold a process that is not a zombie (one
// that exited but was not yet reaped by its new parent counts as gone). Without /proc:
// every group kill() still finds.
std::set<pid_t> groups_with_members(const std::vector<pid_t> &pgids);

} // namespace dt::launch

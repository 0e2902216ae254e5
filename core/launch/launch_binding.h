/* SPDX-License-Identifier: Apache-2.0 */
// CPU binding of local ranks (disttrainrun --bind-to). Like mpirun, which binds each rank
// to a core by default: a rank that stays on its own cores keeps its caches, its spinning
// waits never steal the CPU of the peer they wait for, and the compute plugin's default
// thread count (the CPUs in the affinity mask) becomes its share of the host instead of
// every rank starting one thread per CPU.
#pragma once

#include <string>
#include <vector>

namespace dt::launch {

enum class BindTo {
    automatic, // core when the host's local ranks fit its cores, else none
    core,      // each rank gets an equal share of whole cores; an error if they do not fit
    none,      // ranks inherit disttrainrun's affinity
};

// Parses "auto", "core" or "none"; throws UsageError otherwise.
BindTo parse_bind_to(const std::string &value);

// The CPUs of each of local_size ranks on this host, in local-rank order: the physical
// cores disttrainrun may use (its own affinity mask, grouped by sysfs topology) dealt out
// evenly, every logical CPU of a core to the same rank. Empty when the ranks are not
// bound (none, or automatic with more ranks than cores; note says why). Throws
// UsageError for core with more ranks than cores.
std::vector<std::vector<int>> plan_binding(BindTo how, int local_size, std::string *note);

} // namespace dt::launch

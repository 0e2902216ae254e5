// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_binding.h"

#include "launch/launch_options.h"

#include <sched.h>

#include <fstream>
#include <map>
#include <utility>

namespace dt::launch {
namespace {

// Reads one integer from a sysfs topology file; -1 when absent (containers may hide it).
int read_topology(int cpu, const char *what)
{
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" +
                     what);
    int value = -1;
    if (!(in >> value))
        return -1;
    return value;
}

// The allowed CPUs grouped by physical core (package, core id), cores in the order of
// their lowest CPU. Without topology each CPU counts as a core of its own.
std::vector<std::vector<int>> allowed_cores()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return {};
    std::map<std::pair<int, int>, size_t> index; // (package, core) -> position in cores
    std::vector<std::vector<int>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        int package = read_topology(cpu, "physical_package_id");
        int core = read_topology(cpu, "core_id");
        if (package < 0 || core < 0) {
            cores.push_back({cpu});
            continue;
        }
        auto [it, fresh] = index.emplace(std::make_pair(package, core), cores.size());
        if (fresh)
            cores.emplace_back();
        cores[it->second].push_back(cpu);
    }
    return cores;
}

} // namespace

BindTo parse_bind_to(const std::string &value)
{
    if (value == "auto")
        return BindTo::automatic;
    if (value == "core")
        return BindTo::core;
    if (value == "none")
        return BindTo::none;
    throw UsageError{"--bind-to '" + value + "': expected core, none or auto"};
}

std::vector<std::vector<int>> plan_binding(BindTo how, int local_size, std::string *note)
{
    if (how == BindTo::none || local_size < 1)
        return {};
    std::vector<std::vector<int>> cores = allowed_cores();
    const int n = static_cast<int>(cores.size());
    if (n < local_size) {
        std::string why = std::to_string(local_size) + " ranks on this host, " +
                          std::to_string(n) + " core" + (n == 1 ? "" : "s") +
                          " in disttrainrun's affinity mask";
        if (how == BindTo::core)
            throw UsageError{"--bind-to core: " + why + "; start fewer ranks, widen the "
                             "mask (taskset), or share the cores with --bind-to none"};
        if (note)
            *note = "ranks not bound to cores: " + why;
        return {};
    }
    // Cores dealt out in blocks, the first n % local_size ranks getting one more: a
    // rank's cores are neighbours (often sharing a cache).
    std::vector<std::vector<int>> plan(local_size);
    const int per = n / local_size, extra = n % local_size;
    int next = 0;
    for (int r = 0; r < local_size; ++r) {
        int take = per + (r < extra ? 1 : 0);
        for (int k = 0; k < take; ++k, ++next)
            plan[r].insert(plan[r].end(), cores[next].begin(), cores[next].end());
    }
    return plan;
}

} // namespace dt::launch

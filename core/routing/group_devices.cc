// SPDX-License-Identifier: Apache-2.0
// A group's own device communicator: split from its parent's device transport when
// dt_group_create's check ran (every rank of the parent takes part; the ranks outside
// the group pass no color), so a group's device calls run natively like the whole job's.
// Where the parent has none, or the plugin cannot split (NCCL before 2.18 has no
// ncclCommSplit), the group's device calls are staged and the reason is logged.
#include "routing/router.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <chrono>

namespace dt::routing {

Transport *Router::device_for(uint32_t group) const
{
    if (group == 0)
        return services_.device_transport;
    auto it = group_devices_.find(group);
    return it == group_devices_.end() ? nullptr : it->second.get();
}

void Router::split_device(algo::Comm &comm, const OpDesc &check)
{
    const OpDesc::NewGroup &group = *check.new_group;
    Transport *parent = device_for(check.group);
    if (parent == nullptr)
        return; // no device transport: the group is staged like its parent
    // The check's allgather holds every rank's fingerprint of the group: where they differ
    // dt_group_create fails on every rank, and no rank splits.
    const auto *prints = static_cast<const uint64_t *>(check.recvbuf);
    for (int r = 1; r < comm.size(); ++r)
        if (prints[r] != prints[0])
            return;
    if (parent->ops().split == nullptr) {
        DT_LOG(info, "routing", "group ", group.id, ": device collectives are staged: the "
               "device transport '", parent->name(), "' cannot make a communicator for a "
               "group (its table has no split)");
        return;
    }
    const int me = comm.world_rank(comm.rank());
    auto it = std::find(group.members.begin(), group.members.end(), me);
    const bool member = it != group.members.end();
    const int32_t key = member ? static_cast<int32_t>(it - group.members.begin()) : 0;
    const int32_t size = static_cast<int32_t>(group.members.size());
    int32_t timeout_ms = -1;
    if (comm.deadline() != std::chrono::steady_clock::time_point::max()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            comm.deadline() - std::chrono::steady_clock::now()).count();
        timeout_ms = static_cast<int32_t>(std::clamp<long long>(left, 1, INT32_MAX));
    }
    void *child = nullptr;
    set_last_error("");
    int32_t rc = parent->ops().split(parent->instance(), member ? 0 : -1, key, size,
                                     timeout_ms, &child);
    if (rc == DTP_ERR_UNSUPPORTED) {
        DT_LOG(info, "routing", "group ", group.id, ": device collectives are staged: ",
               last_error());
        set_last_error("");
        return;
    }
    if (rc != DTP_OK)
        throw_error(static_cast<dt_status_t>(rc), "dt_group_create: the device transport '",
                    parent->name(), "' could not make the communicator of group ", group.id,
                    ": ", last_error());
    if (child == nullptr)
        return; // this rank is outside the group
    group_devices_[group.id] = std::make_unique<Transport>(
        cat(parent->name(), "[group ", group.id, "]"), parent->path(), &parent->ops(), child,
        parent->plugin_ops_version());
    DT_LOG(debug, "routing", "group ", group.id, ": rank ", key, " of ", size, " on its own "
           "communicator of device transport '", parent->name(), "'");
}

} // namespace dt::routing

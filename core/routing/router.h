/* SPDX-License-Identifier: Apache-2.0 */
// The router: the one place that decides how a collective runs. Owned by the context,
// which hands it the policy parsed at create and its shared-memory domain. For each
// call it describes the members (topology.h), runs the first path of the kind's table
// (table.cc) that applies, and reports that path's name (debug log, timeline).
//
// DT_AVG is handled here and nowhere else on the way: paths see DT_SUM, and the router
// divides the result once by the divisor the engine passes (the ranks that contributed),
// unless the path divides itself where it is cheaper (Path::divides_average). float16
// divides each rank's contribution before the sum instead (divide_before_sum).
//
// Per call it allocates nothing, looks nothing up by name and builds no string unless
// debug logging is on: the transport's native kinds, the memory it accepts (its
// capability answer) and the whole job's spread over hosts are found once, here.
#pragma once

#include "plugin/transport.h"
#include "routing/device_wait.h"
#include "routing/path.h"
#include "routing/policy.h"
#include "routing/staging.h"
#include "runtime/operation.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace dt::shm {
class Domain;
}
namespace dt::plugin {
class MemoryProvider;
}

namespace dt::routing {

class Router {
public:
    // device: the context's device-only transport (DISTTRAIN_DEVICE_TRANSPORT), or null;
    // domain: the context's shared-memory domain, or null; memory: the context's memory
    // provider, or null (no staging). All must outlive the router. job_size: the world
    // size. Throws dt::Error when the provider cannot stage (a table without copies).
    Router(const Policy &policy, const Transport &transport, Transport *device,
           shm::Domain *domain, plugin::MemoryProvider *memory, int job_size);
    ~Router();
    Router(const Router &) = delete;
    Router &operator=(const Router &) = delete;

    const Policy &policy() const { return policy_; }

    // Runs op among comm's members and returns the name of the path that ran it.
    // avg_divisor: what DT_AVG divides the sum by. Not thread safe: one engine drives
    // the transport at a time. Throws dt::Error on failure.
    const char *run(algo::Comm &comm, const OpDesc &op, int avg_divisor);

    // Runs a host-memory call (the host copy of a staged device call) on the first host
    // path that applies, dividing DT_AVG's sum when args.avg_divisor > 0. Returns the
    // path's name.
    const char *run_host(algo::Comm &comm, const Args &args);

    // Runs a host-memory call on shared memory when every member runs on this host and
    // the policy lets this kind go there; returns the path's name, or null, having run
    // nothing, otherwise. For the engine's own exchanges (negotiation), which then cost a
    // cache line's round trip instead of a loopback transfer.
    const char *run_on_this_host(algo::Comm &comm, const Args &args);
    // Whether a peer on this host waits in the run_on_this_host call with this tag
    // (Comm::tag): it has published its part there.
    bool peer_waits_on_this_host(uint64_t comm_tag) const;
    // The memory provider's pinned buffers and copies, or null without a provider: what
    // fusion stages a batch of device calls through.
    Staging *staging() const { return staging_.get(); }

    // The members of a call on comm as the paths' applies() see them.
    Topology topology(const algo::Comm &comm, bool whole_job);

    // check is dt_group_create's agreement check (OpDesc::new_group), which just ran on
    // comm, the parent's members: when the parent has a device transport that can split
    // (the nccl plugin: ncclCommSplit), every rank of the parent splits it, and the new
    // group's device calls go over its own communicator; otherwise they are staged, with
    // the reason logged. Throws dt::Error when the split itself fails.
    void split_device(algo::Comm &comm, const OpDesc &check);
    // The device transport of a group's members (0: the whole job's), or null.
    Transport *device_for(uint32_t group) const;

    // Runs a ready batch of device allreduces (same dtype and operator, every rank holding
    // its own buffers) on the members' device transport, issued together between the
    // plugin's batch_begin and batch_end and waited for together. Returns the path's
    // name, or null, having run nothing, when the batch cannot go there (no device
    // transport, ordered mode's check, DT_AVG with joined ranks): the caller stages it.
    const char *run_device_batch(algo::Comm &comm, const std::vector<const OpDesc *> &ops,
                                 int avg_divisor);

private:
    // Runs args on the first path of its kind's table that applies to call; average:
    // divide the sum by avg_divisor once.
    const char *dispatch(algo::Comm &comm, const Call &call, const Topology &topo,
                         Args &args, bool average, int avg_divisor);
    // float16's DT_AVG: divides each element of this rank's contribution by divisor, and
    // points args.sendbuf at the quotients (recvbuf for an allreduce, divided_ for a
    // reduce_scatter); the paths then only sum.
    void divide_before_sum(const algo::Comm &comm, Args &args, int divisor);

    Policy policy_;
    std::unique_ptr<Staging> staging_;
    std::unique_ptr<DeviceWait> device_wait_; // with staging_
    Services services_;
    uint32_t native_ = 0;    // kind_bit() per native collective of the transport
    uint32_t device_native_ = 0; // ... of the device transport
    uint8_t p2p_memory_ = 0;    // memory_bit() per memory type its isend/irecv accept
    uint8_t native_memory_ = 0; // ... and its native collectives accept
    Spread job_spread_ = Spread::one_per_host;
    int my_host_ = -1;
    std::vector<int> scratch_; // spread_of() of a group's members
    std::vector<uint16_t> divided_; // divide_before_sum's quotients for a reduce_scatter
    // Groups' device communicators (split_device), destroyed with the router, before the
    // context's device transport they were split from.
    std::unordered_map<uint32_t, std::unique_ptr<Transport>> group_devices_;
};

} // namespace dt::routing

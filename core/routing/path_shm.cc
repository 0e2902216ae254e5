// SPDX-License-Identifier: Apache-2.0
// Shared memory as router paths (core/shm): among members that all run on this host,
// and hierarchically for an allreduce spanning hosts where some host holds several.
#include "routing/paths.h"
#include "shm/route.h"

namespace dt::routing {

namespace {

constexpr uint8_t kHost = memory_bit(Memory::host);

// A forced point-to-point algorithm (DISTTRAIN_ALGORITHM=ring, ...) keeps allreduce off
// shared memory, so that it measures that algorithm; "shm" and "auto" allow it.
bool allreduce_allowed(const Call &call, const Policy &p)
{
    return call.kind != OpKind::allreduce || p.algorithm == algo::AllreduceChoice::automatic ||
           p.algorithm == algo::AllreduceChoice::shm;
}

bool local_applies(const Call &call, const Topology &t, const Policy &p)
{
    return t.shm && t.size > 1 && t.spread == Spread::all_local && allreduce_allowed(call, p);
}

// Only allreduce has a hierarchical form, and it pays only where some host holds
// several members.
bool hierarchical_applies(const Call &call, const Topology &t, const Policy &p)
{
    return call.kind == OpKind::allreduce && t.shm && t.size > 1 &&
           t.spread == Spread::shared_hosts && allreduce_allowed(call, p);
}

shm::Call shm_call(const Args &a)
{
    static_assert(static_cast<int>(OpKind::barrier) == 5, "kKinds follows OpKind");
    static constexpr shm::Kind kKinds[] = {shm::Kind::allreduce, shm::Kind::broadcast,
                                           shm::Kind::allgather, shm::Kind::reduce_scatter,
                                           shm::Kind::alltoall, shm::Kind::barrier};
    shm::Call c;
    c.kind = kKinds[static_cast<int>(a.kind)];
    c.sendbuf = a.sendbuf;
    c.recvbuf = a.recvbuf;
    c.count = a.count;
    c.dtype = a.dtype;
    c.op = a.op;
    c.avg_divisor = a.avg_divisor;
    c.root = a.root;
    c.name = op_kind_name(a.kind);
    return c;
}

bool run_local(const Services &s, algo::Comm &comm, const Args &a)
{
    shm::run_local(*s.domain, comm, shm_call(a));
    return true;
}

bool run_hierarchical(const Services &s, algo::Comm &comm, const Args &a)
{
    shm::run_hierarchical(*s.domain, comm, shm_call(a));
    return true;
}

} // namespace

const Path kShmLocalAllreduce = {"shm_local", kHost, Carrier::shared_memory, true,
                                 local_applies, run_local};
const Path kShmLocal = {"shm_local", kHost, Carrier::shared_memory, false, local_applies,
                        run_local};
// Its leaders' allreduce runs over the transport's point-to-point ops.
const Path kShmHierarchical = {"shm_hierarchical", kHost, Carrier::point_to_point, false,
                               hierarchical_applies, run_hierarchical};

} // namespace dt::routing

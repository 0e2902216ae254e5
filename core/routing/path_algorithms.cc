// SPDX-License-Identifier: Apache-2.0
// The core's point-to-point algorithms as router paths: what serves every call that no
// native collective or shared memory took.
#include "algorithms/algorithms.h"
#include "routing/host_check.h"
#include "routing/paths.h"

namespace dt::routing {

namespace {

constexpr uint8_t kHost = memory_bit(Memory::host);
constexpr Carrier kP2p = Carrier::point_to_point; // every one runs over isend/irecv

size_t bytes_of(const Args &a) { return a.count * dt_dtype_size(a.dtype); }

template <algo::AllreduceChoice Algorithm>
bool allreduce_applies(const Call &call, const Topology &t, const Policy &p)
{
    return algo::select_allreduce(p.algorithm, t.size, call.bytes) == Algorithm;
}

algo::AllreduceArgs allreduce_args(const Args &a)
{
    return {a.sendbuf, a.recvbuf, a.count, a.dtype, a.op};
}

bool always(const Call &, const Topology &, const Policy &) { return true; }

bool run_recursive_doubling(const Services &, algo::Comm &comm, const Args &a)
{
    algo::allreduce_recursive_doubling(comm, allreduce_args(a));
    return true;
}

bool run_halving_doubling(const Services &, algo::Comm &comm, const Args &a)
{
    algo::allreduce_halving_doubling(comm, allreduce_args(a));
    return true;
}

bool run_ring(const Services &, algo::Comm &comm, const Args &a)
{
    algo::allreduce_ring(comm, allreduce_args(a));
    return true;
}

bool run_broadcast(const Services &s, algo::Comm &comm, const Args &a)
{
    // The root receives nothing in a broadcast, and a rank that hears only from its
    // parent in the tree can finish before another rank finds a disagreement: with a
    // call check, every rank first learns that every rank runs this same call.
    if (comm.check() != nullptr && comm.size() > 1)
        check_over_host(s, comm, a);
    algo::broadcast(comm, a.recvbuf, bytes_of(a), a.root);
    return true;
}

bool run_allgather(const Services &, algo::Comm &comm, const Args &a)
{
    algo::allgather_ring(comm, a.sendbuf, a.recvbuf, bytes_of(a));
    return true;
}

bool run_reduce_scatter(const Services &, algo::Comm &comm, const Args &a)
{
    algo::reduce_scatter_ring(comm, a.sendbuf, a.recvbuf, a.count, a.dtype, a.op);
    return true;
}

bool run_alltoall(const Services &, algo::Comm &comm, const Args &a)
{
    algo::alltoall_pairwise(comm, a.sendbuf, a.recvbuf, bytes_of(a));
    return true;
}

bool run_allgatherv(const Services &, algo::Comm &comm, const Args &a)
{
    algo::allgatherv_ring(comm, a.sendbuf, a.recvbuf, a.counts, dt_dtype_size(a.dtype),
                          a.name);
    return true;
}

bool run_alltoallv(const Services &, algo::Comm &comm, const Args &a)
{
    const size_t *send = a.counts, *recv = a.counts + comm.size();
    algo::alltoallv_pairwise(comm, a.sendbuf, send, a.recvbuf, recv, dt_dtype_size(a.dtype),
                             a.name);
    return true;
}

bool run_barrier(const Services &, algo::Comm &comm, const Args &)
{
    algo::barrier_dissemination(comm);
    return true;
}

} // namespace

const Path kRecursiveDoubling = {"recursive_doubling", kHost, kP2p, false,
                                 allreduce_applies<algo::AllreduceChoice::recursive_doubling>,
                                 run_recursive_doubling};
const Path kHalvingDoubling = {"halving_doubling", kHost, kP2p, false,
                               allreduce_applies<algo::AllreduceChoice::halving_doubling>,
                               run_halving_doubling};
const Path kRing = {"ring", kHost, kP2p, false,
                    allreduce_applies<algo::AllreduceChoice::ring>, run_ring};
const Path kBroadcastTreeChain = {"tree_chain", kHost, kP2p, false, always, run_broadcast};
const Path kAllgatherRing = {"ring", kHost, kP2p, false, always, run_allgather};
const Path kReduceScatterRing = {"ring", kHost, kP2p, false, always, run_reduce_scatter};
const Path kAlltoallPairwise = {"pairwise", kHost, kP2p, false, always, run_alltoall};
const Path kAllgathervRing = {"ring", kHost, kP2p, false, always, run_allgatherv};
const Path kAlltoallvPairwise = {"pairwise", kHost, kP2p, false, always, run_alltoallv};
const Path kBarrierDissemination = {"dissemination", kHost, kP2p, false, always, run_barrier};

} // namespace dt::routing

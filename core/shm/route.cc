// SPDX-License-Identifier: Apache-2.0
#include "shm/route.h"

#include "algorithms/algorithms.h"
#include "shm/collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace dt::shm {

namespace {

// Team tags: the call's tag (unique, the same on every rank) times 4 plus the phase, so
// the two shared-memory phases of a hierarchical allreduce never share a tag.
enum Phase : uint64_t { kWhole = 0, kHostReduce = 1, kHostBroadcast = 2 };

TeamArgs team_args(algo::Comm &comm, const std::vector<int> &locals, int me, Phase phase,
                   const char *name)
{
    TeamArgs a;
    a.locals = locals.data();
    a.size = static_cast<int>(locals.size());
    a.rank = me;
    a.tag = comm.tag() * 4 + phase;
    a.deadline = comm.deadline();
    a.cancel = comm.cancel_flag();
    a.comm = &comm;
    a.what = name;
    a.check = comm.check();
    a.name = comm.check_name();
    return a;
}

// The members on this host, in member order, into dom's scratch; this rank's place among
// them.
int find_locals(Domain &dom, const algo::Comm &comm, std::vector<int> &locals)
{
    locals.clear();
    int me = -1;
    for (int i = 0; i < comm.size(); ++i) {
        int local = dom.local_index(comm.world_rank(i));
        if (local < 0)
            continue;
        if (i == comm.rank())
            me = static_cast<int>(locals.size());
        locals.push_back(local);
    }
    return me;
}

void run_team(Team &team, const Call &c)
{
    const size_t esize = dt_dtype_size(c.dtype);
    switch (c.kind) {
    case Kind::allreduce:
        allreduce(team, c.sendbuf, c.recvbuf, c.count, c.dtype, c.op, c.avg_divisor);
        return;
    case Kind::broadcast:
        broadcast(team, c.recvbuf, c.count * esize, c.root);
        return;
    case Kind::allgather:
        allgather(team, c.sendbuf, c.recvbuf, c.count * esize);
        return;
    case Kind::reduce_scatter:
        reduce_scatter(team, c.sendbuf, c.recvbuf, c.count, c.dtype, c.op);
        return;
    case Kind::alltoall:
        alltoall(team, c.sendbuf, c.recvbuf, c.count * esize);
        return;
    case Kind::barrier:
        barrier(team);
        return;
    }
}

// The members on each host reduce through shared memory, the first member of each host
// (its leader) allreduces with the other leaders over the transport, and each leader
// broadcasts the result on its host.
void hierarchical(Domain &dom, algo::Comm &comm, const Call &c,
                  const std::vector<int> &locals, int me)
{
    std::vector<int> leaders; // world ranks, in member order
    std::vector<int> hosts;
    int my_leader_index = -1;
    for (int i = 0; i < comm.size(); ++i) {
        int w = comm.world_rank(i);
        int host = dom.host_of(w);
        if (std::find(hosts.begin(), hosts.end(), host) != hosts.end())
            continue;
        hosts.push_back(host);
        if (w == dom.world_rank())
            my_leader_index = static_cast<int>(leaders.size());
        leaders.push_back(w);
    }
    const size_t bytes = c.count * dt_dtype_size(c.dtype);
    if (locals.size() > 1) {
        Team team(dom, team_args(comm, locals, me, kHostReduce, c.name));
        allreduce(team, c.sendbuf, c.recvbuf, c.count, c.dtype, c.op);
    } else if (c.sendbuf != c.recvbuf && bytes > 0) {
        std::memmove(c.recvbuf, c.sendbuf, bytes);
    }
    if (my_leader_index >= 0) {
        // Between hosts the size decides the algorithm: hierarchical runs only where no
        // point-to-point algorithm was forced (routing/path_shm.cc).
        algo::Comm leaders_comm = comm.subset(my_leader_index, &leaders);
        algo::allreduce(leaders_comm, {c.recvbuf, c.recvbuf, c.count, c.dtype, c.op});
    }
    if (locals.size() > 1) {
        Team team(dom, team_args(comm, locals, me, kHostBroadcast, c.name));
        broadcast(team, c.recvbuf, bytes, 0);
    }
}

// Runs body; a failure marks the domain failed first, since the peers on this host may
// be waiting for a flag this rank will never set.
template <typename Body>
void guarded(Domain &dom, Body &&body)
{
    try {
        body();
    } catch (const std::exception &e) {
        dom.mark_failed(e.what());
        throw;
    }
}

} // namespace

void run_local(Domain &dom, algo::Comm &comm, const Call &c)
{
    std::vector<int> &locals = dom.scratch();
    const int me = find_locals(dom, comm, locals);
    guarded(dom, [&] {
        Team team(dom, team_args(comm, locals, me, kWhole, c.name));
        run_team(team, c);
    });
}

bool peer_published(const Domain &dom, uint64_t comm_tag)
{
    if (dom.failed())
        return false;
    const uint64_t tag = comm_tag * 4 + kWhole;
    for (int local = 0; local < dom.local_size(); ++local) {
        if (local == dom.local_rank())
            continue;
        const TagLine *lines = dom.control(local).tags;
        if (lines[0].tag.load(std::memory_order_relaxed) == tag ||
            lines[1].tag.load(std::memory_order_relaxed) == tag)
            return true;
    }
    return false;
}

void run_hierarchical(Domain &dom, algo::Comm &comm, const Call &c)
{
    std::vector<int> locals; // not the scratch: the leaders' step may route a call
    const int me = find_locals(dom, comm, locals);
    guarded(dom, [&] { hierarchical(dom, comm, c, locals, me); });
}

} // namespace dt::shm

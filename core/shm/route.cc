#include "shm/route.h"

#include "algorithms/algorithms.h"
#include "algorithms/allreduce_select.h"
#include "reduce/reduce.h"
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

void run_local(Team &team, const Call &c)
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
        if (c.avg_divisor > 0)
            reduce::finish_average(c.recvbuf, c.count, c.dtype, c.avg_divisor);
        return;
    case Kind::alltoall:
        alltoall(team, c.sendbuf, c.recvbuf, c.count * esize);
        return;
    case Kind::barrier:
        barrier(team);
        return;
    }
}

// Allreduce across hosts: the members on each host reduce through shared memory, the
// first member of each host (its leader) allreduces with the other leaders over the
// transport, and each leader broadcasts the result on its host.
void run_hierarchical(Domain &dom, algo::Comm &comm, const Call &c,
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
        algo::Comm leaders_comm = comm.subset(my_leader_index, &leaders);
        algo::allreduce(leaders_comm, {c.recvbuf, c.recvbuf, c.count, c.dtype, c.op});
    }
    if (locals.size() > 1) {
        Team team(dom, team_args(comm, locals, me, kHostBroadcast, c.name));
        broadcast(team, c.recvbuf, bytes, 0);
    }
    // Sums travel between hosts; each rank divides its own copy once at the end.
    if (c.avg_divisor > 0)
        reduce::finish_average(c.recvbuf, c.count, c.dtype, c.avg_divisor);
}

} // namespace

bool run(Domain &dom, algo::Comm &comm, const Call &c)
{
    const int n = comm.size();
    if (n <= 1 || dom.failed())
        return false;
    const bool allreduce_here =
        c.kind != Kind::allreduce || dom.allreduce_choice() == algo::AllreduceChoice::automatic ||
        dom.allreduce_choice() == algo::AllreduceChoice::shm;
    if (!allreduce_here)
        return false;

    // The members on this host, in member order, and this rank's place among them.
    std::vector<int> &locals = dom.scratch();
    locals.clear();
    int me = -1;
    for (int i = 0; i < n; ++i) {
        int local = dom.local_index(comm.world_rank(i));
        if (local < 0)
            continue;
        if (i == comm.rank())
            me = static_cast<int>(locals.size());
        locals.push_back(local);
    }
    try {
        if (static_cast<int>(locals.size()) == n) {
            Team team(dom, team_args(comm, locals, me, kWhole, c.name));
            run_local(team, c);
            return true;
        }
        // Spanning hosts: only allreduce has a hierarchical form, and it pays only where
        // some host holds several members.
        if (c.kind != Kind::allreduce)
            return false;
        std::vector<int> hosts;
        for (int i = 0; i < n; ++i)
            hosts.push_back(dom.host_of(comm.world_rank(i)));
        std::sort(hosts.begin(), hosts.end());
        if (std::unique(hosts.begin(), hosts.end()) - hosts.begin() == n)
            return false;
        std::vector<int> mine(locals); // scratch is not ours past this point
        run_hierarchical(dom, comm, c, mine, me);
        return true;
    } catch (const std::exception &e) {
        // The peers on this host may be waiting for a flag we will never set.
        dom.mark_failed(e.what());
        throw;
    }
}

} // namespace dt::shm

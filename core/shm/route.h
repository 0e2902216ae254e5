/* SPDX-License-Identifier: Apache-2.0 */
// Running a call through shared memory, once the router (core/routing) has chosen it:
// among members that all share this host (run_local), or an allreduce spanning hosts
// where some host holds several members (run_hierarchical: shm reduce on each host,
// allreduce among one leader per host over the transport, shm broadcast on each host).
#pragma once

#include "algorithms/comm.h"
#include "shm/domain.h"

#include <disttrain/disttrain.h>

namespace dt::shm {

enum class Kind { allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier };

struct Call {
    Kind kind = Kind::barrier;
    const void *sendbuf = nullptr;
    void *recvbuf = nullptr;
    size_t count = 0; // elements; per-rank block for allgather/reduce_scatter/alltoall
    dt_dtype_t dtype = DT_UINT8;
    dt_reduce_op_t op = DT_SUM; // never DT_AVG: the router divides
    int avg_divisor = 0;        // allreduce on one host: > 0 divides each reduced slice by
                                // it while in cache (collectives.h); ignored elsewhere
    int root = 0;
    const char *name = "collective";
};

// Both throw dt::Error on failure, having marked the domain failed so that peers
// waiting on this rank fail at once.
void run_local(Domain &domain, algo::Comm &comm, const Call &call);
void run_hierarchical(Domain &domain, algo::Comm &comm, const Call &call);

// Whether a peer on this host has published the run_local call with this transport tag
// (Comm::tag): it waits in that call for this rank. Reads the peers' tag lines, nothing
// more; false once the domain failed.
bool peer_published(const Domain &domain, uint64_t comm_tag);

} // namespace dt::shm

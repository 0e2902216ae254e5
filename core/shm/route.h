// Where a collective runs when this context has a shared-memory domain: among ranks that
// all share this host, through shared memory; an allreduce spanning hosts, where some host
// holds several of its ranks, hierarchically (shm reduce on each host, allreduce among one
// leader per host over the transport, shm broadcast on each host); anything else over the
// transport (run() says false).
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
    dt_reduce_op_t op = DT_SUM; // DT_AVG already turned into DT_SUM by the caller
    int avg_divisor = 0;        // > 0 (DT_AVG): the result is divided by it, here
    int root = 0;
    const char *name = "collective";
};

// Runs call among comm's members if shared memory applies and returns true; false
// leaves the call to the transport's algorithms. Throws dt::Error on failure (the domain
// is then marked failed, so peers waiting on this rank fail at once).
bool run(Domain &domain, algo::Comm &comm, const Call &call);

} // namespace dt::shm

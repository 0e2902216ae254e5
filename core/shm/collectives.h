/* SPDX-License-Identifier: Apache-2.0 */
// Collectives among the ranks of one host through shared memory (see team.h for the
// handoff). Each function runs the whole call for this rank and throws dt::Error (after
// marking the domain failed) when a peer dies, fails, the deadline passes or the context
// is aborted. Buffers follow disttrain.h: counts in elements, in place where documented.
//
// Reductions always combine contributions in member order 0, 1, ..., n-1, whichever path
// runs, so every rank gets the same bits and a size threshold never changes a result.
#pragma once

#include "shm/settings.h"
#include "shm/team.h"

#include <disttrain/disttrain.h>

#include <cstddef>

namespace dt::shm {

// Measured on the development host (tests/bench/compare_allreduce.py); see tuning.cc.
struct Tuning {
    size_t oneshot_bytes; // up to this, allreduce reads every peer's whole input
    size_t slice_bytes;   // pipelined paths: bytes per rank per piece
    int slots;            // pieces in flight (the staging area is split in this many)
    size_t cma_bytes;     // allreduce from this size up reads the peers' buffers directly
                          // (process_vm_readv) where the domain allows it; SIZE_MAX: never
    size_t cma_piece;     // single-copy allreduce: bytes of a rank's slice per piece
    size_t choose_bytes;  // below cma_bytes, allreduce from this size up takes the path
                          // the measured times choose (path_choice.h); SIZE_MAX: never
    size_t stream_bytes;  // the pipelined allreduce from this size up hands data to the
                          // peers through memory: non-temporal stores (stream_copy.h)
    bool stream_forced;   // stream_bytes was set: also where the host is oversubscribed
};
Tuning tuning(const TuningOverrides &overrides, int members);

// avg_divisor > 0: the result is divided by it (DT_AVG), where it is cheapest: the
// pipelined path divides each reduced slice while it is in cache, before the peers copy
// it, instead of a second pass over the whole result. Same bits either way.
void allreduce(Team &team, const void *sendbuf, void *recvbuf, size_t count,
               dt_dtype_t dtype, dt_reduce_op_t op, int avg_divisor = 0);
void reduce_scatter(Team &team, const void *sendbuf, void *recvbuf, size_t recvcount,
                    dt_dtype_t dtype, dt_reduce_op_t op);
void allgather(Team &team, const void *sendbuf, void *recvbuf, size_t block_bytes);
void broadcast(Team &team, void *buf, size_t bytes, int root);
void alltoall(Team &team, const void *sendbuf, void *recvbuf, size_t block_bytes);
void barrier(Team &team);

} // namespace dt::shm

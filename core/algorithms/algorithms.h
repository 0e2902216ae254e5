/* SPDX-License-Identifier: Apache-2.0 */
// Collective algorithms over point-to-point (one algorithm per file). Each function runs
// the whole collective for this rank and throws dt::Error on failure. Buffers follow the
// public API's conventions (disttrain.h): counts in elements, in place when documented.
#pragma once

#include "algorithms/allreduce_select.h"
#include "algorithms/comm.h"

#include <disttrain/disttrain.h>

#include <cstddef>

namespace dt::algo {

struct AllreduceArgs {
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    dt_dtype_t dtype;
    dt_reduce_op_t op;
};

struct RingOptions {
    // Bytes per pipeline segment: the reduction of one segment overlaps the transfer of
    // the next. 0 picks the tuned default.
    size_t segment_bytes = 0;
};

// Pipelined ring: reduce-scatter then allgather, each step split in segments.
void allreduce_ring(Comm &comm, const AllreduceArgs &args, const RingOptions &opts = {});
// Recursive halving-doubling (Rabenseifner), for small messages; handles any rank count.
void allreduce_halving_doubling(Comm &comm, const AllreduceArgs &args);
// Recursive doubling: log2(p) swaps of the whole vector, for the smallest messages (and
// on 2 ranks up to a few hundred KiB, where it sends what the ring sends in one step).
void allreduce_recursive_doubling(Comm &comm, const AllreduceArgs &args);
// Picks an algorithm by size and rank count (select_allreduce), or runs `forced`.
void allreduce(Comm &comm, const AllreduceArgs &args,
               AllreduceChoice forced = AllreduceChoice::automatic);

// Broadcast of bytes from root: binomial tree for small, pipelined chain for large.
void broadcast(Comm &comm, void *buf, size_t bytes, int root);

// Ring allgather: block_bytes from each rank, rank r's block at recvbuf + r*block_bytes.
void allgather_ring(Comm &comm, const void *sendbuf, void *recvbuf, size_t block_bytes);

// Ring reduce-scatter: sendbuf holds size*recvcount elements, recvbuf gets block rank.
void reduce_scatter_ring(Comm &comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                         dt_dtype_t dtype, dt_reduce_op_t op);

// Pairwise exchange alltoall (size-1 steps, each a sendrecv with distinct peers).
void alltoall_pairwise(Comm &comm, const void *sendbuf, void *recvbuf, size_t block_bytes);

// Ring allgatherv: counts[b] elements of elem_bytes from rank b, packed in rank order
// in recvbuf; in place when sendbuf is this rank's block there. Checks first that every
// rank passes the same counts (counts_agreement.h). name: the operation's, for messages.
void allgatherv_ring(Comm &comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                     size_t elem_bytes, const char *name);

// Pairwise-exchange alltoallv: sendcounts[j] elements to rank j, recvcounts[i] from rank
// i, blocks packed in rank order; buffers must not overlap. Checks first that every
// pair's counts agree (counts_agreement.h).
void alltoallv_pairwise(Comm &comm, const void *sendbuf, const size_t *sendcounts,
                        void *recvbuf, const size_t *recvcounts, size_t elem_bytes,
                        const char *name);

// Dissemination barrier: ceil(log2(size)) rounds of zero-byte messages.
void barrier_dissemination(Comm &comm);

} // namespace dt::algo

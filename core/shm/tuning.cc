// SPDX-License-Identifier: Apache-2.0
// Size thresholds of the shared-memory collectives, from runs of disttrain-perf on the
// development host (2-core AMD EPYC, 2 MiB L2 per core, 32 MiB L3) with the
// DISTTRAIN_SHM_SLICE / DISTTRAIN_SHM_ONESHOT overrides (TuningOverrides, parsed with the
// routing policy at create). The host was shared with other
// jobs (load ~17 on 2 cores) while they were taken: slices of 32-64 KiB lost most there
// (each piece is two handoffs, and a handoff costs a scheduler round when the peer is
// off its core); 128-256 KiB kept the best figures. Re-measured with the ranks under
// SCHED_FIFO (repeatable there): slices of 32-512 KiB and one-shot limits of 16-128 KiB
// all came within +-10% of each other from 16 KiB to 4 MiB, so these stay.
//
// Single-copy reads (process_vm_readv, allreduce_cma.cc) against staging. Runs of
// DISTTRAIN_SHM_CMA_BYTES=0 against DISTTRAIN_SHM_CMA=0, interleaved (README.md,
// Measured), found either one up to 4x faster than the other, depending on the host and
// on the moment (path_choice.h has the figures). So from 64 KiB the first member of a
// call chooses by the times it measured of both (path_choice.h), unless
// DISTTRAIN_SHM_CMA_BYTES fixes a threshold. Pieces of 512 KiB were the best of
// 128 KiB-1 MiB by a few percent (2 ranks).
#include "shm/collectives.h"

#include <cstdint>

namespace dt::shm {

Tuning tuning(const TuningOverrides &o, int members)
{
    // One-shot reads (n-1) whole inputs per rank; the pipelined path two handoffs and
    // 1/n of the reduction. The crossover moves down as n grows.
    size_t oneshot = members <= 2 ? 32 * 1024 : 16 * 1024;
    size_t slice = 128 * 1024;
    size_t cma = SIZE_MAX;
    size_t cma_piece = 512 * 1024;
    size_t choose = 64 * 1024;
    // An override is rounded up to whole cache lines: the pipelined paths cut slices into
    // whole elements, and a slice smaller than one (3 bytes of float32) would be none.
    if (o.slice_bytes > 0)
        slice = (static_cast<size_t>(o.slice_bytes) + 63) & ~size_t(63);
    if (o.oneshot_bytes >= 0)
        oneshot = static_cast<size_t>(o.oneshot_bytes);
    if (o.cma_bytes >= 0) { // a fixed threshold: no choosing by measured times
        cma = static_cast<size_t>(o.cma_bytes);
        choose = SIZE_MAX;
    }
    if (o.cma_piece_bytes > 0)
        cma_piece = static_cast<size_t>(o.cma_piece_bytes);
    // The pipelined allreduce may hand its pieces over through memory at every size; the
    // measured choice decides where single-copy reads are allowed (path_choice.h).
    size_t stream = 0;
    if (o.stream_bytes >= 0)
        stream = static_cast<size_t>(o.stream_bytes);
    return {oneshot, slice, 4, cma, cma_piece, choose, stream, o.stream_bytes >= 0};
}

} // namespace dt::shm

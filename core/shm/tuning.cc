// Size thresholds of the shared-memory collectives, from runs of disttrain-perf on the
// development host (2-core AMD EPYC, 2 MiB L2 per core, 32 MiB L3) with the
// DISTTRAIN_SHM_SLICE / DISTTRAIN_SHM_ONESHOT overrides. The host was shared with other
// jobs (load ~17 on 2 cores) while they were taken: slices of 32-64 KiB lost most there
// (each piece is two handoffs, and a handoff costs a scheduler round when the peer is
// off its core); 128-256 KiB kept the best figures. Re-measured with the ranks under
// SCHED_FIFO (repeatable there): slices of 32-512 KiB and one-shot limits of 16-128 KiB
// all came within +-10% of each other from 16 KiB to 4 MiB, so these stay.
#include "runtime/env.h"
#include "shm/collectives.h"

namespace dt::shm {

Tuning tuning(int members)
{
    // One-shot reads (n-1) whole inputs per rank; the pipelined path two handoffs and
    // 1/n of the reduction. The crossover moves down as n grows.
    size_t oneshot = members <= 2 ? 32 * 1024 : 16 * 1024;
    size_t slice = 128 * 1024;
    static const int64_t slice_env = env::get_int("DISTTRAIN_SHM_SLICE", 0, 0, 1 << 30);
    static const int64_t oneshot_env = env::get_int("DISTTRAIN_SHM_ONESHOT", -1, -1, 1 << 30);
    if (slice_env > 0)
        slice = static_cast<size_t>(slice_env);
    if (oneshot_env >= 0)
        oneshot = static_cast<size_t>(oneshot_env);
    return {oneshot, slice, 4};
}

} // namespace dt::shm

/* SPDX-License-Identifier: Apache-2.0 */
// What a context's policy (core/routing/policy.h) tells the shared-memory path: whether
// to attach at all, how big the staging area is, single-copy reads, and the measurement
// overrides of the size thresholds and waits. Parsed once at dt_context_create, so a
// malformed value fails there and a collective never reads the environment.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace dt::shm {

// Overrides of tuning()'s measured values (tuning.cc) and of the waits (team.cc), for
// measurement. A negative or zero value keeps the measured default, as documented per
// field.
struct TuningOverrides {
    int64_t slice_bytes = 0;     // DISTTRAIN_SHM_SLICE; 0: measured
    int64_t oneshot_bytes = -1;  // DISTTRAIN_SHM_ONESHOT; -1: measured
    int64_t cma_bytes = -1;      // DISTTRAIN_SHM_CMA_BYTES; -1: chosen by measured times
    int64_t cma_piece_bytes = 0; // DISTTRAIN_SHM_CMA_PIECE; 0: measured
    int64_t stream_bytes = -1;   // DISTTRAIN_SHM_STREAM_BYTES; -1: measured
    std::chrono::microseconds spin{50};   // DISTTRAIN_SHM_SPIN_US
    std::chrono::microseconds yield{200}; // DISTTRAIN_SHM_YIELD_US
};

struct Settings {
    bool enabled = true;          // DISTTRAIN_SHM
    int64_t data_bytes = 4 << 20; // DISTTRAIN_SHM_BYTES: staging per rank
    bool cma = true;              // DISTTRAIN_SHM_CMA
    int64_t local_size = 0;       // DISTTRAIN_SHM_LOCAL_SIZE (tests); 0: the host's
    TuningOverrides tuning;
};

} // namespace dt::shm

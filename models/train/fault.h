/* SPDX-License-Identifier: Apache-2.0 */
// Fault injection for the resume and elastic tests: DISTTRAIN_TRAIN_KILL_AT makes this
// process kill itself with SIGKILL at a chosen point, which a test cannot hit reliably
// from outside.
//   DISTTRAIN_TRAIN_KILL_AT=step:N         before optimizer step N (1-based, counted by
//                                          this process, steps done again included)
//   DISTTRAIN_TRAIN_KILL_AT=checkpoint:N   halfway through writing the N-th checkpoint
//   DISTTRAIN_TRAIN_KILL_RANKS=1,3         only the processes the launcher started as
//                                          these ranks (DISTTRAIN_RANK), and never a
//                                          replacement (DISTTRAIN_ELASTIC_JOIN); unset:
//                                          every process
// Before dying the process says so on stderr with the wall-clock time, so a benchmark
// can time the recovery from the kill itself. Unset (the normal case) it costs two
// getenv calls at start-up.
#pragma once

#include <cstdint>

namespace dt::models {

enum class FaultPoint { step, checkpoint_write };

// Counts calls per point and kills the process when the configured count is reached.
void fault_point(FaultPoint point);

} // namespace dt::models

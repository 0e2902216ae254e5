/* SPDX-License-Identifier: Apache-2.0 */
// Fault injection for the resume tests: DISTTRAIN_TRAIN_KILL_AT makes this process kill
// itself with SIGKILL at a chosen point, which a test cannot hit reliably from outside.
//   DISTTRAIN_TRAIN_KILL_AT=step:N         before optimizer step N (1-based, global count)
//   DISTTRAIN_TRAIN_KILL_AT=checkpoint:N   halfway through writing the N-th checkpoint
// Unset (the normal case) it costs one getenv at start-up.
#pragma once

#include <cstdint>

namespace dt::models {

enum class FaultPoint { step, checkpoint_write };

// Counts calls per point and kills the process when the configured count is reached.
void fault_point(FaultPoint point);

} // namespace dt::models

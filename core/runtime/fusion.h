/* SPDX-License-Identifier: Apache-2.0 */
// Which ready operations the engine packs into its fusion buffer (engine_execute.cc).
// Kept apart from the engine so that the rule is testable without one.
#pragma once

#include "runtime/signature.h"

#include <cstddef>

namespace dt {

// Fusion pays for small tensors (one transfer instead of many); a large one gains nothing
// and would only be copied in and out, so it runs on its own.
constexpr size_t kFuseBelowBytes = size_t{1} << 20;

size_t bytes_of(const Signature &sig);

// Whether sig may start or join a fused batch: a small allreduce. A host batch is
// copied with memcpy into the fusion buffer; a device batch with the memory provider's
// copies into a pinned staging buffer, one wait each way for the whole batch.
bool fuses(const Signature &sig);

// Whether b may join a batch that a started: the same kind, dtype, operator, group and
// memory type, so that the batch is one valid call of one reduction on one memory.
bool fusable(const Signature &a, const Signature &b);

} // namespace dt

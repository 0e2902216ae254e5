/* SPDX-License-Identifier: Apache-2.0 */
// Which point-to-point allreduce algorithm runs a call. DISTTRAIN_ALGORITHM (parsed once
// into the routing policy, core/routing/policy.h) forces one, for measurement; "shm"
// asks for the shared-memory path where the members share a host (hierarchical across
// hosts) and is "auto" here. The router (core/routing) asks select_allreduce for each
// call that reaches the algorithms.
#pragma once

#include <cstddef>

namespace dt::algo {

enum class AllreduceChoice { automatic, ring, halving_doubling, shm, recursive_doubling };

// The algorithm that runs an allreduce of `bytes` per rank on `size` ranks: `forced`
// when it names a point-to-point algorithm, else the one the size thresholds choose
// (never automatic or shm).
AllreduceChoice select_allreduce(AllreduceChoice forced, int size, size_t bytes) noexcept;

} // namespace dt::algo

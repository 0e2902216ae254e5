/* SPDX-License-Identifier: Apache-2.0 */
// What ranks must agree on for a named operation before it runs.
#pragma once

#include "runtime/operation.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dt {

struct Signature {
    OpKind kind = OpKind::barrier;
    dt_dtype_t dtype = DT_UINT8;
    dt_reduce_op_t op = DT_SUM;
    uint64_t count = 0;
    int32_t root = 0;
    uint32_t group = 0; // 0: the whole context
    dt_memory_type_t memory = DT_MEMORY_HOST; // host or device, never auto

    bool operator==(const Signature &) const = default;
};

Signature signature_of(const OpDesc &desc, uint32_t group);

// Whether the operator matters for this kind (reductions) and the root (broadcast).
bool kind_reduces(OpKind kind);
bool kind_has_root(OpKind kind);
// Whether the count is compared: not for allgatherv and alltoallv, whose algorithms
// compare every rank's counts before the data moves (algorithms/counts_agreement.h) and
// name the counts that differ, which a total could not; and an alltoallv's ranks
// receive different totals anyway.
bool kind_counts_agree(OpKind kind);

// "allreduce 'grad.w': ranks disagree on dtype: rank 0 float32, rank 1 float64". Empty when
// all signatures are equal. Fields are checked in the order kind, group, dtype, count,
// op, root, memory, and the first that differs is named ("ranks disagree on memory:
// rank 0 host, rank 1 device").
std::string describe_mismatch(const std::string &name,
                              const std::vector<std::pair<int, Signature>> &by_rank);

// "ranks disagree on dtype: rank 0 float32, rank 1 float64" for the first field that
// differs (in describe_mismatch's order); empty when all signatures are equal.
std::string disagreement(const std::vector<std::pair<int, Signature>> &by_rank);

// "0, 2, 5" for messages.
std::string rank_list(const std::vector<int> &ranks);
// "rank 3" or "ranks 0, 2, 5".
std::string ranks_phrase(const std::vector<int> &ranks);

} // namespace dt

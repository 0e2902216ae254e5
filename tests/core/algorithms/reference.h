/* SPDX-License-Identifier: Apache-2.0 */
// Inputs and scalar reference results for collective tests. Inputs are chosen so every
// sum and product is exact in the dtype (small integers; products of +-1, 2, 0.5), which
// makes the result independent of the order the algorithm combines ranks in; integers
// use the full range and wrap, exactly as the kernels do.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::test {

using Bytes = std::vector<std::byte>;

size_t esize(dt_dtype_t dtype);

// count elements of dtype for `rank`, deterministic in (seed, rank).
Bytes make_input(dt_dtype_t dtype, dt_reduce_op_t op, size_t count, int rank, uint32_t seed);

// inputs[r] reduced over all ranks with op (and averaged for DT_AVG), computed one
// element at a time with scalar code.
Bytes reference_reduce(dt_dtype_t dtype, dt_reduce_op_t op, const std::vector<Bytes> &inputs,
                       size_t count);

// "" when equal, otherwise where and how the two first differ.
std::string compare(dt_dtype_t dtype, const void *got, const void *want, size_t count);

extern const std::vector<dt_dtype_t> kAllDtypes;
extern const std::vector<dt_reduce_op_t> kAllOps;
std::string dtype_op_name(dt_dtype_t dtype, dt_reduce_op_t op);

} // namespace dt::test

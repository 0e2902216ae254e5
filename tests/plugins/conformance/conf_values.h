/* SPDX-License-Identifier: Apache-2.0 */
// Reference values of the conformance suite: every dtype's element codec, the inputs each
// rank contributes and the result a correct library must produce, computed locally in
// double precision. Independent of the library's own kernels on purpose.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>

namespace dt::conformance {

// Written into outputs before a call and into the guard elements after them; no input
// or correct result ever holds it (|inputs| <= 100, |results| <= 100).
constexpr double kPoison = 123.0;

void put(dt_dtype_t dtype, void *buf, size_t index, double value);
double get(dt_dtype_t dtype, const void *buf, size_t index);

bool is_floating(dt_dtype_t dtype);

// What rank `seed` contributes at index to a reduction with op over `ranks` ranks:
// small integers (and halves for floating types) whose sums, products, minima and maxima
// are exact in every dtype and stay within int8/uint8 range.
double input(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed, size_t index);

// The data a copy collective (broadcast, allgather, alltoall) moves for `seed`: the sum
// inputs of a seed that no rank's reduction input uses.
constexpr uint64_t payload_seed(uint64_t seed) { return seed + 1000; }
inline double payload(dt_dtype_t dtype, int ranks, uint64_t seed, size_t index)
{
    return input(dtype, DT_SUM, ranks, payload_seed(seed), index);
}

// op applied over input(..., r, index) for r in 0..ranks-1; integer averages truncate
// toward zero as documented in disttrain.h ("integer division").
double reduced(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t index);

// Exact comparison, except for floating averages, which round once in the dtype.
bool matches(dt_dtype_t dtype, dt_reduce_op_t op, double got, double expected);

// Bulk forms for whole buffers, which the suite fills and checks by the million: they
// encode into elements [at, at + n) of buf exactly what put() of the per-element value
// would, for indices first .. first + n - 1, with the dtype and the op dispatched once.
void put_repeated(dt_dtype_t dtype, void *buf, size_t at, size_t n, double value);
void put_inputs(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed, size_t first,
                size_t n, void *buf, size_t at);
inline void put_payloads(dt_dtype_t dtype, int ranks, uint64_t seed, size_t first, size_t n,
                         void *buf, size_t at)
{
    put_inputs(dtype, DT_SUM, ranks, payload_seed(seed), first, n, buf, at);
}
void put_reduced(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t first, size_t n,
                 void *buf, size_t at);

} // namespace dt::conformance

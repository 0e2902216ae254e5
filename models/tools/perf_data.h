/* SPDX-License-Identifier: Apache-2.0 */
// Element access for every dtype of the public API, and the data patterns that
// disttrain-perf uses to check a collective's result against a local expectation.
//
// Patterns are small integers, so sums, products, minima and maxima of a few ranks are
// exact in every dtype (float16 and bfloat16 included); only averages of floating types
// need a tolerance, because the division by the rank count rounds.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>

namespace dt::perf {

// IEEE binary16 and bfloat16 conversions, rounding to nearest even.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

// Writes value (converted to dtype, rounded for the 16-bit floats) as element index.
void store_element(dt_dtype_t dtype, void *buf, size_t index, double value);
// Reads element index as a double (every value of every dtype fits exactly, except
// int64 beyond 2^53, which the patterns never produce).
double load_element(dt_dtype_t dtype, const void *buf, size_t index);

bool is_float_dtype(dt_dtype_t dtype);
bool is_signed_dtype(dt_dtype_t dtype);

// The value that `seed` (a rank, or a rank and block) contributes at index for op:
// small enough that reducing it over `ranks` ranks stays exact and in range.
double pattern_value(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed,
                     size_t index);

// The reduction of pattern_value over seeds 0..ranks-1 at index, as the library must
// compute it: integer averages truncate toward zero (C integer division).
double expected_reduction(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t index);

// Whether got matches expected for dtype and op: exact, except floating averages and
// the rounding of 16-bit floats.
bool element_matches(dt_dtype_t dtype, dt_reduce_op_t op, double got, double expected);

} // namespace dt::perf

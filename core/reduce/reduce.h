/* SPDX-License-Identifier: Apache-2.0 */
// Vectorised reduction kernels for host memory. float16 and bfloat16 are widened to
// float32 for the arithmetic and rounded back to nearest-even once per call.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>

namespace dt::reduce {

// dst[i] = op(a[i], b[i]) for i < count. dst may alias a or b. DT_AVG reduces as a sum
// (divide with finish_average once all contributions are in).
void reduce(void *dst, const void *a, const void *b, size_t count, dt_dtype_t dtype,
            dt_reduce_op_t op);

// dst[i] = op(dst[i], src[i]).
inline void reduce_into(void *dst, const void *src, size_t count, dt_dtype_t dtype,
                        dt_reduce_op_t op)
{
    reduce(dst, dst, src, count, dtype, op);
}

// Divides every element by divisor (integer division for integer types): the last step
// of DT_AVG.
void finish_average(void *buf, size_t count, dt_dtype_t dtype, int divisor);

// dst[i] = src[i] / divisor for float16 (dst may be src): DT_AVG of float16 divides each
// contribution before the sum instead, so that the partial sums stay within float16's
// range (two ranks averaging 60000 would overflow to inf). NCCL does the same for its
// floating types, and PyTorch's DDP divides float16 gradients before their allreduce.
// Each quotient is correctly rounded, except one that would round up past
// 65504 / divisor: it rounds toward zero, so that the exact sum of divisor quotients
// stays within float16's range (three ranks averaging 65504 get 65472, not inf). Up to
// three ranks that holds for the rounded sums too; with more, the rounding of the
// partial sums (each step of a ring rounds to float16) can still carry the mean of
// values within a few steps of 65504 to inf, as with NCCL's.
void divide_float16(void *dst, const void *src, size_t count, int divisor);

// Scalar conversions, exposed for tests and other kernels.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

} // namespace dt::reduce

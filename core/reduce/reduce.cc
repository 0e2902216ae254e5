// SPDX-License-Identifier: Apache-2.0
// reduce(): validates the dtype and operator and runs the kernel for the dtype. Each
// per-dtype kernel is compiled three times (AVX-512, AVX2, baseline) and picked at load
// time; float16 is widened to float32 in cache-sized blocks (F16C), reduced with the
// float32 kernel and rounded back once; bfloat16 does the same in one fused loop.

// -O3 for this file whatever the build type: the kernels rely on the vectoriser, and
// Meson cannot give single files of core_internal their own flags. Before any include
// so that inlined header functions get the same options.
#pragma GCC optimize("O3")

#include "reduce/reduce.h"

#include "reduce/ops.h"
#include "runtime/error.h"

namespace dt::reduce {

namespace detail {

namespace {

template <typename T>
DT_ALWAYS_INLINE void typed(void *dst, const void *a, const void *b, size_t n,
                            dt_reduce_op_t op)
{
    dispatch_op(static_cast<T *>(dst), static_cast<const T *>(a),
                static_cast<const T *>(b), n, op);
}

DT_REDUCE_CLONES void reduce_f64(void *d, const void *a, const void *b, size_t n,
                                 dt_reduce_op_t op)
{
    typed<double>(d, a, b, n, op);
}
DT_REDUCE_CLONES void reduce_i8(void *d, const void *a, const void *b, size_t n,
                                dt_reduce_op_t op)
{
    typed<int8_t>(d, a, b, n, op);
}
DT_REDUCE_CLONES void reduce_u8(void *d, const void *a, const void *b, size_t n,
                                dt_reduce_op_t op)
{
    typed<uint8_t>(d, a, b, n, op);
}
DT_REDUCE_CLONES void reduce_i32(void *d, const void *a, const void *b, size_t n,
                                 dt_reduce_op_t op)
{
    typed<int32_t>(d, a, b, n, op);
}
DT_REDUCE_CLONES void reduce_i64(void *d, const void *a, const void *b, size_t n,
                                 dt_reduce_op_t op)
{
    typed<int64_t>(d, a, b, n, op);
}

// bfloat16 in one fused pass (the conversions are a few integer operations that
// vectorise on every ISA, so no float32 staging block is needed).
DT_REDUCE_CLONES void reduce_bf16(void *d, const void *a, const void *b, size_t n,
                                  dt_reduce_op_t op)
{
    auto *dst = static_cast<uint16_t *>(d);
    const auto *x = static_cast<const uint16_t *>(a);
    const auto *y = static_cast<const uint16_t *>(b);
    switch (op) {
    case DT_SUM:
    case DT_AVG:
        return bf16_loop<Add>(dst, x, y, n);
    case DT_MIN:
        return bf16_loop<Min>(dst, x, y, n);
    case DT_MAX:
        return bf16_loop<Max>(dst, x, y, n);
    case DT_PROD:
        return bf16_loop<Mul>(dst, x, y, n);
    default:
        return;
    }
}

// Elements per block of the float16/bfloat16 paths: three float blocks stay in L1.
constexpr size_t kBlock = 1024;

using Widen = void (*)(const uint16_t *, float *, size_t);
using Narrow = void (*)(const float *, uint16_t *, size_t);

void reduce_16bit(void *dst, const void *a, const void *b, size_t n, dt_reduce_op_t op,
                  Widen widen, Narrow narrow)
{
    auto *d16 = static_cast<uint16_t *>(dst);
    const auto *a16 = static_cast<const uint16_t *>(a);
    const auto *b16 = static_cast<const uint16_t *>(b);
    alignas(64) float fa[kBlock];
    alignas(64) float fb[kBlock];
    for (size_t off = 0; off < n; off += kBlock) {
        size_t len = n - off < kBlock ? n - off : kBlock;
        widen(a16 + off, fa, len);
        widen(b16 + off, fb, len);
        float_op(fa, fa, fb, len, op);
        narrow(fa, d16 + off, len);
    }
}

} // namespace

DT_REDUCE_CLONES void float_op(float *dst, const float *a, const float *b, size_t n,
                               dt_reduce_op_t op)
{
    dispatch_op(dst, a, b, n, op);
}

} // namespace detail

void reduce(void *dst, const void *a, const void *b, size_t count, dt_dtype_t dtype,
            dt_reduce_op_t op)
{
    using namespace detail;
    if (op < 0 || op >= DT_REDUCE_OP_COUNT_)
        throw_error(DT_ERR_INVALID_ARGUMENT, "reduce: unknown reduction operator ",
                    static_cast<int>(op), "; expected a dt_reduce_op_t value");
    if (count == 0)
        return;
    switch (dtype) {
    case DT_FLOAT32:
        return float_op(static_cast<float *>(dst), static_cast<const float *>(a),
                        static_cast<const float *>(b), count, op);
    case DT_FLOAT64:
        return reduce_f64(dst, a, b, count, op);
    case DT_FLOAT16:
        return reduce_16bit(dst, a, b, count, op, widen_f16, narrow_f16);
    case DT_BFLOAT16:
        return reduce_bf16(dst, a, b, count, op);
    case DT_INT8:
        return reduce_i8(dst, a, b, count, op);
    case DT_UINT8:
        return reduce_u8(dst, a, b, count, op);
    case DT_INT32:
        return reduce_i32(dst, a, b, count, op);
    case DT_INT64:
        return reduce_i64(dst, a, b, count, op);
    default:
        throw_error(DT_ERR_INVALID_ARGUMENT, "reduce: unknown dtype ",
                    static_cast<int>(dtype), "; expected a dt_dtype_t value");
    }
}

} // namespace dt::reduce

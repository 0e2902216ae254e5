// SPDX-License-Identifier: Apache-2.0
// finish_average(): the division that turns a DT_AVG sum into a mean. Floats divide (not
// multiply by a reciprocal) so the result is the correctly rounded quotient every rank
// computes alike; integers use C++ division, which truncates toward zero.
// divide_float16(): float16's division of each contribution before the sum, rounded so
// that the sum of the quotients stays finite.

// -O3 for this file whatever the build type: the kernels rely on the vectoriser, and
// Meson cannot give single files of core_internal their own flags. Before any include
// so that inlined header functions get the same options.
#pragma GCC optimize("O3")

#include "reduce/ops.h"
#include "reduce/reduce.h"
#include "runtime/error.h"

#include <cstring>
#include <type_traits>

namespace dt::reduce {

namespace {

template <typename T>
DT_ALWAYS_INLINE void divide(void *buf, size_t n, int divisor)
{
    // Integers divide in a 64-bit type of their signedness so a divisor wider than T
    // (300 ranks averaging uint8) is not truncated.
    using D = std::conditional_t<std::is_floating_point_v<T>, T,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
    auto *p = static_cast<T *>(buf);
    const D d = static_cast<D>(divisor);
    for (size_t i = 0; i < n; ++i)
        p[i] = static_cast<T>(static_cast<D>(p[i]) / d);
}

DT_REDUCE_CLONES void divide_f32(void *buf, size_t n, int d) { divide<float>(buf, n, d); }
DT_REDUCE_CLONES void divide_f64(void *buf, size_t n, int d) { divide<double>(buf, n, d); }

using Widen = void (*)(const uint16_t *, float *, size_t);
using Narrow = void (*)(const float *, uint16_t *, size_t);

// dst[i] = src[i] / divisor, computed in float32; dst may be src.
void divide_16bit(void *dst, const void *src, size_t n, int divisor, Widen widen,
                  Narrow narrow)
{
    constexpr size_t kBlock = 1024;
    alignas(64) float tmp[kBlock];
    const auto *in = static_cast<const uint16_t *>(src);
    auto *out = static_cast<uint16_t *>(dst);
    for (size_t off = 0; off < n; off += kBlock) {
        size_t len = n - off < kBlock ? n - off : kBlock;
        widen(in + off, tmp, len);
        divide_f32(tmp, len, divisor);
        narrow(tmp, out + off, len);
    }
}

// The largest float16 whose product with divisor stays within float16's range (65504).
uint16_t largest_quotient(int divisor)
{
    uint16_t bound = float_to_half(65504.0f / static_cast<float>(divisor));
    if (static_cast<double>(half_to_float(bound)) * divisor > 65504.0)
        --bound; // one step toward zero: the magnitude bits of a positive float16
    return bound;
}

// Rounded to nearest, a quotient of a finite value can land one step above
// value / divisor, and divisor of those sum past 65504 (3 ranks averaging 65504: 21840 * 3
// = 65520, which rounds to inf). Such a quotient, and only such, is rounded toward zero
// instead, so that no sum of the ranks' quotients leaves float16's range.
void keep_sums_finite(uint16_t *q, size_t n, uint16_t bound)
{
    for (size_t i = 0; i < n; ++i) {
        const uint16_t magnitude = q[i] & 0x7fffu;
        if (magnitude > bound && magnitude < 0x7c00u) // 0x7c00 and above: inf, NaN
            q[i] = static_cast<uint16_t>((q[i] & 0x8000u) | bound);
    }
}

} // namespace

void finish_average(void *buf, size_t count, dt_dtype_t dtype, int divisor)
{
    using namespace detail;
    if (divisor <= 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, "finish_average: divisor ", divisor,
                    " is not positive; pass the number of ranks that contributed");
    if (divisor == 1 || count == 0)
        return;
    switch (dtype) {
    case DT_FLOAT32:
        return divide_f32(buf, count, divisor);
    case DT_FLOAT64:
        return divide_f64(buf, count, divisor);
    case DT_FLOAT16:
        return divide_16bit(buf, buf, count, divisor, widen_f16, narrow_f16);
    case DT_BFLOAT16:
        return divide_16bit(buf, buf, count, divisor, widen_bf16, narrow_bf16);
    // Integer division has no SIMD instruction; these loops run at scalar speed, which is
    // fine for a once-per-collective pass over this rank's share.
    case DT_INT8:
        return divide<int8_t>(buf, count, divisor);
    case DT_UINT8:
        return divide<uint8_t>(buf, count, divisor);
    case DT_INT32:
        return divide<int32_t>(buf, count, divisor);
    case DT_INT64:
        return divide<int64_t>(buf, count, divisor);
    default:
        throw_error(DT_ERR_INVALID_ARGUMENT, "finish_average: unknown dtype ",
                    static_cast<int>(dtype), "; expected a dt_dtype_t value");
    }
}

void divide_float16(void *dst, const void *src, size_t count, int divisor)
{
    if (divisor <= 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, "divide_float16: divisor ", divisor,
                    " is not positive; pass the number of ranks that contribute");
    if (divisor == 1 || count == 0) {
        if (dst != src && count > 0)
            std::memcpy(dst, src, count * sizeof(uint16_t));
        return;
    }
    // Block by block, so that the bound is applied while the quotients are in cache
    // rather than in a second pass over the whole buffer.
    constexpr size_t kBlock = 4096;
    const uint16_t bound = largest_quotient(divisor);
    const auto *in = static_cast<const uint16_t *>(src);
    auto *out = static_cast<uint16_t *>(dst);
    for (size_t off = 0; off < count; off += kBlock) {
        const size_t len = count - off < kBlock ? count - off : kBlock;
        divide_16bit(out + off, in + off, len, divisor, detail::widen_f16, detail::narrow_f16);
        keep_sums_finite(out + off, len, bound);
    }
}

} // namespace dt::reduce

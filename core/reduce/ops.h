/* SPDX-License-Identifier: Apache-2.0 */
// Element-wise reduction loops shared by the kernel files of this folder (internal).
//
// Each loop is a plain indexed loop over arrays that GCC auto-vectorises at -O3; the
// public entry points wrap them in target_clones functions so one binary carries AVX-512,
// AVX2 and baseline versions and picks one at load time. dst may alias a or b exactly
// (dst == a or dst == b), which element-wise loops handle; partial overlap is not allowed.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DT_REDUCE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DT_REDUCE_CLONES
#endif

#define DT_ALWAYS_INLINE inline __attribute__((always_inline))

namespace dt::reduce::detail {

// Integer arithmetic is done in the unsigned type of the same width so that overflow
// wraps (two's complement) instead of being undefined behaviour.
template <typename T, bool = std::is_integral_v<T>>
struct WideOf {
    using type = T;
};
template <typename T>
struct WideOf<T, true> {
    using type = std::make_unsigned_t<T>;
};
template <typename T>
using Wide = typename WideOf<T>::type;

struct Add {
    template <typename T>
    static DT_ALWAYS_INLINE T apply(T x, T y)
    {
        using W = Wide<T>;
        return static_cast<T>(static_cast<W>(static_cast<W>(x) + static_cast<W>(y)));
    }
};

struct Mul {
    template <typename T>
    static DT_ALWAYS_INLINE T apply(T x, T y)
    {
        using W = Wide<T>;
        // uint8/int8 promote to int before multiplying; cast through unsigned int so even
        // 16-bit promotions stay unsigned and cannot overflow a signed int.
        using P = std::conditional_t<(sizeof(W) < sizeof(unsigned)), unsigned, W>;
        return static_cast<T>(static_cast<W>(static_cast<P>(static_cast<W>(x)) *
                                              static_cast<P>(static_cast<W>(y))));
    }
};

// min/max propagate NaN: if either input is NaN the result is NaN. Bitwise | keeps the select branch-free
// so the loop vectorises.
struct Min {
    template <typename T>
    static DT_ALWAYS_INLINE T apply(T x, T y)
    {
        if constexpr (std::is_floating_point_v<T>)
            return ((x < y) | (x != x)) ? x : y;
        else
            return x < y ? x : y;
    }
};

struct Max {
    template <typename T>
    static DT_ALWAYS_INLINE T apply(T x, T y)
    {
        if constexpr (std::is_floating_point_v<T>)
            return ((x > y) | (x != x)) ? x : y;
        else
            return x > y ? x : y;
    }
};

template <typename Op, typename T>
DT_ALWAYS_INLINE void loop(T *dst, const T *a, const T *b, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = Op::template apply<T>(a[i], b[i]);
}

// Runs the loop for op; DT_AVG reduces as a sum (finish_average divides at the end).
template <typename T>
DT_ALWAYS_INLINE void dispatch_op(T *dst, const T *a, const T *b, size_t n,
                                  dt_reduce_op_t op)
{
    switch (op) {
    case DT_SUM:
    case DT_AVG:
        loop<Add>(dst, a, b, n);
        break;
    case DT_MIN:
        loop<Min>(dst, a, b, n);
        break;
    case DT_MAX:
        loop<Max>(dst, a, b, n);
        break;
    case DT_PROD:
        loop<Mul>(dst, a, b, n);
        break;
    default:
        break; // reduce() validates op before calling in
    }
}

// bfloat16 <-> float32: widening is a shift; narrowing rounds to nearest even and keeps
// NaN a (quiet) NaN, which plain rounding could carry into infinity.
DT_ALWAYS_INLINE float bf16_widen(uint16_t b)
{
    return __builtin_bit_cast(float, static_cast<uint32_t>(b) << 16);
}
DT_ALWAYS_INLINE uint16_t bf16_narrow(float f)
{
    uint32_t bits = __builtin_bit_cast(uint32_t, f);
    uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = (bits >> 16) | 0x40u;
    return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// One pass over bfloat16 inputs: widen, combine in float32, round back.
template <typename Op>
DT_ALWAYS_INLINE void bf16_loop(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = bf16_narrow(Op::template apply<float>(bf16_widen(a[i]), bf16_widen(b[i])));
}

// Float kernel used by the float16/bfloat16 paths on widened blocks.
void float_op(float *dst, const float *a, const float *b, size_t n, dt_reduce_op_t op);

// Block conversions between float16/bfloat16 and float32 (F16C when the CPU has it).
void widen_f16(const uint16_t *src, float *dst, size_t n);
void narrow_f16(const float *src, uint16_t *dst, size_t n);
void widen_bf16(const uint16_t *src, float *dst, size_t n);
void narrow_bf16(const float *src, uint16_t *dst, size_t n);

} // namespace dt::reduce::detail

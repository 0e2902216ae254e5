// SPDX-License-Identifier: Apache-2.0
// float16 and bfloat16 conversions. The scalar functions are portable and bit-exact with
// the F16C instructions (round to nearest even, NaN kept as a quiet NaN with its sign and
// top payload bits), so a block converted on a CPU without F16C matches one with it.

// -O3 for this file whatever the build type: the kernels rely on the vectoriser, and
// Meson cannot give single files of core_internal their own flags. Before any include
// so that inlined header functions get the same options.
#pragma GCC optimize("O3")

#include "reduce/ops.h"
#include "reduce/reduce.h"

#include <bit>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DT_HAVE_X86 1
#endif

namespace dt::reduce {

float half_to_float(uint16_t h)
{
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) // inf, or NaN made quiet as F16C does
        return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13) |
                                    (mant != 0 ? 0x400000u : 0u));
    if (exp == 0) { // zero or subnormal: mant * 2^-24 is exact in float
        float mag = static_cast<float>(mant) * 0x1p-24f;
        return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(mag));
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_half(float f)
{
    uint32_t bits = std::bit_cast<uint32_t>(f);
    uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u) // NaN: quiet, keep the top payload bits
        return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x47800000u) // >= 65536: infinity (65520..65536 rounds up below)
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (abs < 0x38800000u) {
        // Below the smallest normal half: let the FPU round by adding a magic number
        // whose ulp is the half subnormal step (F. Giesen's float_to_half_fast3_rtne).
        const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        float sum = std::bit_cast<float>(abs) + std::bit_cast<float>(magic_bits);
        return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(sum) - magic_bits));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    return static_cast<uint16_t>(sign | (abs >> 13));
}

float bfloat16_to_float(uint16_t b)
{
    return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t float_to_bfloat16(float f)
{
    uint32_t bits = std::bit_cast<uint32_t>(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: truncate and force the quiet bit
        return static_cast<uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

namespace detail {

namespace {

#ifdef DT_HAVE_X86
bool cpu_has_f16c()
{
    static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    return has;
}

__attribute__((target("avx,f16c"))) void widen_f16_f16c(const uint16_t *src, float *dst,
                                                         size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i)
        dst[i] = half_to_float(src[i]);
}

__attribute__((target("avx,f16c"))) void narrow_f16_f16c(const float *src, uint16_t *dst,
                                                          size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), h);
    }
    for (; i < n; ++i)
        dst[i] = float_to_half(src[i]);
}
#endif

} // namespace

void widen_f16(const uint16_t *src, float *dst, size_t n)
{
#ifdef DT_HAVE_X86
    if (cpu_has_f16c())
        return widen_f16_f16c(src, dst, n);
#endif
    for (size_t i = 0; i < n; ++i)
        dst[i] = half_to_float(src[i]);
}

void narrow_f16(const float *src, uint16_t *dst, size_t n)
{
#ifdef DT_HAVE_X86
    if (cpu_has_f16c())
        return narrow_f16_f16c(src, dst, n);
#endif
    for (size_t i = 0; i < n; ++i)
        dst[i] = float_to_half(src[i]);
}

// bfloat16 needs no special instructions: the loops below are integer shifts and adds
// that vectorise on every ISA.
DT_REDUCE_CLONES void widen_bf16(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = bf16_widen(src[i]);
}

DT_REDUCE_CLONES void narrow_bf16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = bf16_narrow(src[i]);
}

} // namespace detail
} // namespace dt::reduce

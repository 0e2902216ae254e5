/* SPDX-License-Identifier: Apache-2.0 */
// Scalar conversions between float32, bfloat16 and float16 (round to nearest even), and a
// dispatch over a tensor's dtype for the element-wise loops written here rather than as
// oneDNN primitives (they are memory bound; a loop is as fast and needs no cache entry).
#pragma once

#include <disttrain/plugin/compute.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dtp::onednn {

struct bf16_t {
    uint16_t bits;
};
struct f16_t {
    uint16_t bits;
};

// bfloat16 from and to its bits: the value widened exactly, and a float rounded to
// nearest even with a NaN kept quiet. Branch-free, so that loops calling them vectorise.
inline float bf16_value(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

inline uint16_t bf16_bits(float f)
{
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float to_float(float v) { return v; }

inline float to_float(bf16_t v) { return bf16_value(v.bits); }

inline float to_float(f16_t v)
{
    const uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
    uint32_t exp = (v.bits >> 10) & 0x1fu;
    uint32_t mant = v.bits & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (mant << 13); // inf / nan
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        u = sign;
    } else { // subnormal: normalise
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        u = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

template <typename T>
T from_float(float f);

template <>
inline float from_float<float>(float f) { return f; }

template <>
inline bf16_t from_float<bf16_t>(float f) { return bf16_t{bf16_bits(f)}; }

template <>
inline f16_t from_float<f16_t>(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return f16_t{static_cast<uint16_t>(sign | 0x7e00u)};
    if (abs >= 0x477ff000u) // rounds to >= 65520: infinity
        return f16_t{static_cast<uint16_t>(sign | 0x7c00u)};
    if (abs < 0x38800000u) { // below the smallest normal half: subnormal or zero
        if (abs < 0x33000000u)
            return f16_t{sign};
        const uint32_t exp = abs >> 23;
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exp; // 14..24
        uint32_t half = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u)))
            ++half;
        return f16_t{static_cast<uint16_t>(sign | half)};
    }
    uint32_t r = abs - 0x38000000u; // rebias 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return f16_t{static_cast<uint16_t>(sign | (r >> 13))};
}

// Calls f(T{}) with T the element type of dtype (float, bf16_t or f16_t).
template <typename F>
void by_dtype(int32_t dtype, F &&f)
{
    switch (dtype) {
    case DTP_FLOAT32: f(float{}); return;
    case DTP_BFLOAT16: f(bf16_t{}); return;
    case DTP_FLOAT16: f(f16_t{}); return;
    default: throw std::invalid_argument("dtype " + std::to_string(dtype) + " is not float");
    }
}

inline int64_t count_of(const dtp_tensor_t &t)
{
    int64_t n = 1;
    for (int i = 0; i < t.ndims; ++i)
        n *= t.dims[i];
    return n;
}

// Elements per channel of an (N, C) or (N, C, H, W) tensor.
inline int64_t spatial_of(const dtp_tensor_t &t)
{
    return t.ndims == 4 ? t.dims[2] * t.dims[3] : 1;
}

} // namespace dtp::onednn

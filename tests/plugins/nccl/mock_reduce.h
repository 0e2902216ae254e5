/* SPDX-License-Identifier: Apache-2.0 */
// The mock NCCL's reductions: acc[i] = acc[i] (op) in[i] for every NCCL type, with
// float16 and bfloat16 computed in float, as NCCL does. AVG accumulates as SUM and
// mock_divide turns the sum into the mean at the end.
#pragma once

#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ncclmock {

inline size_t size_of(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

inline float half_to_float(uint16_t h) {
    uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign << 31;
        } else { // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            bits = (sign << 31) | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = (sign << 31) | 0x7f800000u | (mant << 13);
    } else {
        bits = (sign << 31) | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t float_to_half(float f) { // round to nearest even
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t h = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1u))) ++h;
        return static_cast<uint16_t>(sign | h);
    }
    uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_float(uint16_t b) {
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t float_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

template <typename T> T apply(T a, T b, ncclRedOp_t op) {
    switch (op) {
    case ncclProd: return static_cast<T>(a * b);
    case ncclMin: return std::min(a, b);
    case ncclMax: return std::max(a, b);
    default: return static_cast<T>(a + b); // ncclSum, ncclAvg
    }
}

template <typename T> void reduce_as(void *acc, const void *in, size_t n, ncclRedOp_t op) {
    for (size_t i = 0; i < n; ++i) {
        T a, b;
        std::memcpy(&a, static_cast<char *>(acc) + i * sizeof(T), sizeof(T));
        std::memcpy(&b, static_cast<const char *>(in) + i * sizeof(T), sizeof(T));
        a = apply(a, b, op);
        std::memcpy(static_cast<char *>(acc) + i * sizeof(T), &a, sizeof(T));
    }
}

template <float (*To)(uint16_t), uint16_t (*From)(float)>
void reduce_16(void *acc, const void *in, size_t n, ncclRedOp_t op) {
    auto *a = static_cast<uint16_t *>(acc);
    const auto *b = static_cast<const uint16_t *>(in);
    for (size_t i = 0; i < n; ++i) a[i] = From(apply(To(a[i]), To(b[i]), op));
}

// acc = acc (op) in, n elements of t.
inline void reduce(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op) {
    switch (t) {
    case ncclInt8: reduce_as<int8_t>(acc, in, n, op); break;
    case ncclUint8: reduce_as<uint8_t>(acc, in, n, op); break;
    case ncclInt32: reduce_as<int32_t>(acc, in, n, op); break;
    case ncclUint32: reduce_as<uint32_t>(acc, in, n, op); break;
    case ncclInt64: reduce_as<int64_t>(acc, in, n, op); break;
    case ncclUint64: reduce_as<uint64_t>(acc, in, n, op); break;
    case ncclFloat32: reduce_as<float>(acc, in, n, op); break;
    case ncclFloat64: reduce_as<double>(acc, in, n, op); break;
    case ncclFloat16: reduce_16<half_to_float, float_to_half>(acc, in, n, op); break;
    case ncclBfloat16: reduce_16<bf16_to_float, float_to_bf16>(acc, in, n, op); break;
    default: break;
    }
}

template <typename T> void divide_as(void *acc, size_t n, int by) {
    for (size_t i = 0; i < n; ++i) {
        T a;
        std::memcpy(&a, static_cast<char *>(acc) + i * sizeof(T), sizeof(T));
        a = static_cast<T>(a / static_cast<T>(by));
        std::memcpy(static_cast<char *>(acc) + i * sizeof(T), &a, sizeof(T));
    }
}

template <float (*To)(uint16_t), uint16_t (*From)(float)>
void divide_16(void *acc, size_t n, int by) {
    auto *a = static_cast<uint16_t *>(acc);
    for (size_t i = 0; i < n; ++i) a[i] = From(To(a[i]) / static_cast<float>(by));
}

// ncclAvg's last step: the sum divided by the rank count.
inline void divide(void *acc, size_t n, ncclDataType_t t, int by) {
    switch (t) {
    case ncclInt8: divide_as<int8_t>(acc, n, by); break;
    case ncclUint8: divide_as<uint8_t>(acc, n, by); break;
    case ncclInt32: divide_as<int32_t>(acc, n, by); break;
    case ncclUint32: divide_as<uint32_t>(acc, n, by); break;
    case ncclInt64: divide_as<int64_t>(acc, n, by); break;
    case ncclUint64: divide_as<uint64_t>(acc, n, by); break;
    case ncclFloat32: divide_as<float>(acc, n, by); break;
    case ncclFloat64: divide_as<double>(acc, n, by); break;
    case ncclFloat16: divide_16<half_to_float, float_to_half>(acc, n, by); break;
    case ncclBfloat16: divide_16<bf16_to_float, float_to_bf16>(acc, n, by); break;
    default: break;
    }
}

} // namespace ncclmock

// SPDX-License-Identifier: Apache-2.0
#include "conf_values.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace dt::conformance {

namespace {

// IEEE binary16 through the compiler's own conversions (round to nearest even, as the
// library's kernels must), not through the library's.
uint16_t to_half(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

double from_half(uint16_t bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }

uint16_t to_bf16(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

double from_bf16(uint16_t b)
{
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

template <typename T>
void put_as(void *buf, size_t i, T v)
{
    std::memcpy(static_cast<char *>(buf) + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
T get_as(const void *buf, size_t i)
{
    T v;
    std::memcpy(&v, static_cast<const char *>(buf) + i * sizeof(T), sizeof(T));
    return v;
}

// 25 bits: 32-bit arithmetic on it is exact, and its modulo below cheaper than 64-bit.
uint32_t mix(uint64_t seed, size_t index)
{
    return static_cast<uint32_t>(((seed * 2654435761u + index * 40503u + 17u) &
                                  0xffffffffu) >> 7);
}

} // namespace

void put(dt_dtype_t dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case DT_FLOAT32: put_as<float>(buf, i, static_cast<float>(v)); break;
    case DT_FLOAT64: put_as<double>(buf, i, v); break;
    case DT_FLOAT16: put_as<uint16_t>(buf, i, to_half(static_cast<float>(v))); break;
    case DT_BFLOAT16: put_as<uint16_t>(buf, i, to_bf16(static_cast<float>(v))); break;
    case DT_INT8: put_as<int8_t>(buf, i, static_cast<int8_t>(v)); break;
    case DT_UINT8: put_as<uint8_t>(buf, i, static_cast<uint8_t>(v)); break;
    case DT_INT32: put_as<int32_t>(buf, i, static_cast<int32_t>(v)); break;
    case DT_INT64: put_as<int64_t>(buf, i, static_cast<int64_t>(v)); break;
    default: break;
    }
}

double get(dt_dtype_t dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case DT_FLOAT32: return get_as<float>(buf, i);
    case DT_FLOAT64: return get_as<double>(buf, i);
    case DT_FLOAT16: return from_half(get_as<uint16_t>(buf, i));
    case DT_BFLOAT16: return from_bf16(get_as<uint16_t>(buf, i));
    case DT_INT8: return get_as<int8_t>(buf, i);
    case DT_UINT8: return get_as<uint8_t>(buf, i);
    case DT_INT32: return get_as<int32_t>(buf, i);
    case DT_INT64: return static_cast<double>(get_as<int64_t>(buf, i));
    default: return NAN;
    }
}

bool is_floating(dt_dtype_t dtype)
{
    return dtype == DT_FLOAT32 || dtype == DT_FLOAT64 || dtype == DT_FLOAT16 ||
           dtype == DT_BFLOAT16;
}

double input(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed, size_t index)
{
    const uint32_t h = mix(seed, index);
    const bool floating = is_floating(dtype);
    const bool is_signed = dtype != DT_UINT8;
    switch (op) {
    case DT_MIN:
    case DT_MAX:
        return is_signed ? static_cast<double>(h % 201) - 100.0 : static_cast<double>(h % 101);
    case DT_PROD: {
        // Only the first six ranks contribute a 2 (or 1/2), so |product| <= 64.
        static constexpr double kFloat[] = {1.0, 2.0, 0.5, -1.0, -2.0, 1.0};
        static constexpr double kSigned[] = {1.0, 2.0, -1.0, 1.0};
        static constexpr double kUnsigned[] = {1.0, 2.0, 1.0};
        double v = floating ? kFloat[h % 6] : is_signed ? kSigned[h % 4] : kUnsigned[h % 3];
        if (seed >= 6 && std::fabs(v) != 1.0)
            v = v < 0 ? -1.0 : 1.0;
        return v;
    }
    case DT_SUM:
    case DT_AVG:
    default: {
        // |sum| <= 60 over any rank count, so int8 and uint8 never overflow.
        const int m = std::max(1, std::min(7, 60 / std::max(ranks, 1)));
        const double v = static_cast<double>(h % static_cast<uint32_t>(2 * m + 1));
        if (!is_signed)
            return v;
        return floating ? (v - m) * 0.5 : v - m;
    }
    }
}

double reduced(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t index)
{
    double acc = input(dtype, op, ranks, 0, index);
    for (int r = 1; r < ranks; ++r) {
        const double v = input(dtype, op, ranks, static_cast<uint64_t>(r), index);
        if (op == DT_SUM || op == DT_AVG) acc += v;
        else if (op == DT_PROD) acc *= v;
        else if (op == DT_MIN) acc = std::min(acc, v);
        else acc = std::max(acc, v);
    }
    if (op == DT_AVG)
        acc = is_floating(dtype) ? acc / ranks : std::trunc(acc / ranks);
    return acc;
}

bool matches(dt_dtype_t dtype, dt_reduce_op_t op, double got, double expected)
{
    if (got == expected)
        return true;
    if (!is_floating(dtype) || op != DT_AVG || std::isnan(got))
        return false;
    const double eps = dtype == DT_FLOAT64   ? 1e-15
                       : dtype == DT_FLOAT32 ? 1.2e-7
                       : dtype == DT_FLOAT16 ? 9.8e-4
                                             : 7.9e-3;
    return std::fabs(got - expected) <= eps * std::max(std::fabs(expected), 1.0);
}

} // namespace dt::conformance

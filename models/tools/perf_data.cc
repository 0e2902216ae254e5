// SPDX-License-Identifier: Apache-2.0
#include "perf_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dt::perf {

namespace {

uint32_t float_bits(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float bits_float(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

template <typename T>
T *typed(void *buf) { return static_cast<T *>(buf); }
template <typename T>
const T *typed(const void *buf) { return static_cast<const T *>(buf); }

// Magnitude of summed patterns: |sum| over `ranks` ranks stays within int8.
int sum_magnitude(int ranks) { return std::clamp(100 / std::max(ranks, 1), 1, 8); }

} // namespace

uint16_t float_to_half(float value)
{
    uint32_t x = float_bits(value);
    const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) // inf stays inf, NaN stays a quiet NaN
        return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);
    if (x >= 0x477ff000u) // rounds to a value beyond the largest half
        return sign | 0x7c00u;
    if (x < 0x38800000u) { // subnormal half: the value in units of 2^-24, rounded to even
        const float units = std::nearbyint(bits_float(x) * 16777216.0f);
        return sign | static_cast<uint16_t>(units);
    }
    const uint32_t exponent = (x >> 23) - 127 + 15;
    const uint32_t mantissa = x & 0x7fffffu;
    uint32_t half = (exponent << 10) | (mantissa >> 13);
    const uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        ++half; // a carry into the exponent is the correct rounding
    return sign | static_cast<uint16_t>(half);
}

float half_to_float(uint16_t bits)
{
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    float magnitude;
    if (exponent == 0)
        magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    else if (exponent == 31)
        magnitude = mantissa ? NAN : INFINITY;
    else
        magnitude = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
    return (bits & 0x8000u) ? -magnitude : magnitude;
}

uint16_t float_to_bfloat16(float value)
{
    const uint32_t x = float_bits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

void store_element(dt_dtype_t dtype, void *buf, size_t index, double value)
{
    switch (dtype) {
    case DT_FLOAT32: typed<float>(buf)[index] = static_cast<float>(value); break;
    case DT_FLOAT64: typed<double>(buf)[index] = value; break;
    case DT_FLOAT16:
        typed<uint16_t>(buf)[index] = float_to_half(static_cast<float>(value));
        break;
    case DT_BFLOAT16:
        typed<uint16_t>(buf)[index] = float_to_bfloat16(static_cast<float>(value));
        break;
    case DT_INT8: typed<int8_t>(buf)[index] = static_cast<int8_t>(value); break;
    case DT_UINT8: typed<uint8_t>(buf)[index] = static_cast<uint8_t>(value); break;
    case DT_INT32: typed<int32_t>(buf)[index] = static_cast<int32_t>(value); break;
    case DT_INT64: typed<int64_t>(buf)[index] = static_cast<int64_t>(value); break;
    default: break;
    }
}

double load_element(dt_dtype_t dtype, const void *buf, size_t index)
{
    switch (dtype) {
    case DT_FLOAT32: return typed<float>(buf)[index];
    case DT_FLOAT64: return typed<double>(buf)[index];
    case DT_FLOAT16: return half_to_float(typed<uint16_t>(buf)[index]);
    case DT_BFLOAT16: return bfloat16_to_float(typed<uint16_t>(buf)[index]);
    case DT_INT8: return typed<int8_t>(buf)[index];
    case DT_UINT8: return typed<uint8_t>(buf)[index];
    case DT_INT32: return typed<int32_t>(buf)[index];
    case DT_INT64: return static_cast<double>(typed<int64_t>(buf)[index]);
    default: return NAN;
    }
}

bool is_float_dtype(dt_dtype_t dtype)
{
    return dtype == DT_FLOAT32 || dtype == DT_FLOAT64 || dtype == DT_FLOAT16 ||
           dtype == DT_BFLOAT16;
}

bool is_signed_dtype(dt_dtype_t dtype) { return dtype != DT_UINT8; }

double pattern_value(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed,
                     size_t index)
{
    const bool is_signed = is_signed_dtype(dtype);
    const uint64_t mix = seed * 131u + index * 7u + 3u;
    switch (op) {
    case DT_PROD: {
        // Factors of 1 and 2 (and -1 for signed types): |product| <= 2^6 fits int8.
        const bool two = seed < 6 && (seed + index) % 3 == 0;
        const bool negative = is_signed && (seed * 5 + index) % 4 == 0;
        return (two ? 2.0 : 1.0) * (negative ? -1.0 : 1.0);
    }
    case DT_MIN:
    case DT_MAX:
        return static_cast<double>(mix % 23) - (is_signed ? 11.0 : 0.0);
    case DT_SUM:
    case DT_AVG:
    default: {
        const int m = sum_magnitude(ranks);
        const auto v = static_cast<double>(mix % static_cast<uint64_t>(2 * m + 1));
        return is_signed ? v - m : v;
    }
    }
}

double expected_reduction(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t index)
{
    double acc = pattern_value(dtype, op, ranks, 0, index);
    for (int r = 1; r < ranks; ++r) {
        const double v = pattern_value(dtype, op, ranks, static_cast<uint64_t>(r), index);
        switch (op) {
        case DT_SUM:
        case DT_AVG: acc += v; break;
        case DT_PROD: acc *= v; break;
        case DT_MIN: acc = std::min(acc, v); break;
        case DT_MAX: acc = std::max(acc, v); break;
        default: break;
        }
    }
    if (op == DT_AVG)
        acc = is_float_dtype(dtype) ? acc / ranks : std::trunc(acc / ranks);
    return acc;
}

bool element_matches(dt_dtype_t dtype, dt_reduce_op_t op, double got, double expected)
{
    if (got == expected)
        return true;
    if (!is_float_dtype(dtype) || op != DT_AVG)
        return false;
    // Averages round once in the dtype (float16/bfloat16 accumulate in float32).
    double tolerance = 1e-12;
    if (dtype == DT_FLOAT32) tolerance = 1e-6;
    if (dtype == DT_FLOAT16) tolerance = 2e-3;
    if (dtype == DT_BFLOAT16) tolerance = 1.6e-2;
    return std::fabs(got - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}

} // namespace dt::perf

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

// Each dtype's element: its bits in memory and their conversion from and to double.
template <typename B, B (*Encode)(double), double (*Decode)(B)>
struct Codec {
    using Bits = B;
    static Bits encode(double v) { return Encode(v); }
    static double decode(Bits b) { return Decode(b); }
};

template <typename T>
T narrow(double v) { return static_cast<T>(v); }
template <typename T>
double widen(T v) { return static_cast<double>(v); }
uint16_t half_of(double v) { return to_half(static_cast<float>(v)); }
uint16_t bf16_of(double v) { return to_bf16(static_cast<float>(v)); }

// Calls f with the codec of dtype (an unknown dtype: f is not called), so that a loop
// inside f runs with the dtype fixed.
template <typename F>
void with_codec(dt_dtype_t dtype, F &&f)
{
    switch (dtype) {
    case DT_FLOAT32: f(Codec<float, narrow<float>, widen<float>>{}); break;
    case DT_FLOAT64: f(Codec<double, narrow<double>, widen<double>>{}); break;
    case DT_FLOAT16: f(Codec<uint16_t, half_of, from_half>{}); break;
    case DT_BFLOAT16: f(Codec<uint16_t, bf16_of, from_bf16>{}); break;
    case DT_INT8: f(Codec<int8_t, narrow<int8_t>, widen<int8_t>>{}); break;
    case DT_UINT8: f(Codec<uint8_t, narrow<uint8_t>, widen<uint8_t>>{}); break;
    case DT_INT32: f(Codec<int32_t, narrow<int32_t>, widen<int32_t>>{}); break;
    case DT_INT64: f(Codec<int64_t, narrow<int64_t>, widen<int64_t>>{}); break;
    default: break;
    }
}

// Elements [at, at + n) of buf get value(k) for k = 0 .. n - 1.
template <typename Value>
void put_each(dt_dtype_t dtype, void *buf, size_t at, size_t n, Value value)
{
    with_codec(dtype, [&](auto codec) {
        using C = decltype(codec);
        for (size_t k = 0; k < n; ++k)
            put_as<typename C::Bits>(buf, at + k, C::encode(value(k)));
    });
}

// 25 bits: 32-bit arithmetic on it is exact, and its modulo below cheaper than 64-bit.
uint32_t mix(uint64_t seed, size_t index)
{
    return static_cast<uint32_t>(((seed * 2654435761u + index * 40503u + 17u) &
                                  0xffffffffu) >> 7);
}

// What input() derives from the dtype, the op and the rank count, worked out once for a
// whole buffer.
struct Rule {
    dt_reduce_op_t op;
    bool floating;
    bool is_signed;
    uint32_t sum_span; // sums and averages: values 0 .. sum_span - 1, then shifted
    double sum_shift;
};

Rule rule_of(dt_dtype_t dtype, dt_reduce_op_t op, int ranks)
{
    Rule r{};
    r.op = op;
    r.floating = is_floating(dtype);
    r.is_signed = dtype != DT_UINT8;
    // |sum| <= 60 over any rank count, so int8 and uint8 never overflow.
    const int m = std::max(1, std::min(7, 60 / std::max(ranks, 1)));
    r.sum_span = static_cast<uint32_t>(2 * m + 1);
    r.sum_shift = m;
    return r;
}

inline double input_of(const Rule &r, uint64_t seed, size_t index)
{
    const uint32_t h = mix(seed, index);
    switch (r.op) {
    case DT_MIN:
    case DT_MAX:
        return r.is_signed ? static_cast<double>(h % 201) - 100.0
                           : static_cast<double>(h % 101);
    case DT_PROD: {
        // Only the first six ranks contribute a 2 (or 1/2), so |product| <= 64.
        static constexpr double kFloat[] = {1.0, 2.0, 0.5, -1.0, -2.0, 1.0};
        static constexpr double kSigned[] = {1.0, 2.0, -1.0, 1.0};
        static constexpr double kUnsigned[] = {1.0, 2.0, 1.0};
        double v = r.floating ? kFloat[h % 6] : r.is_signed ? kSigned[h % 4] : kUnsigned[h % 3];
        if (seed >= 6 && std::fabs(v) != 1.0)
            v = v < 0 ? -1.0 : 1.0;
        return v;
    }
    case DT_SUM:
    case DT_AVG:
    default: {
        const double v = static_cast<double>(h % r.sum_span);
        if (!r.is_signed)
            return v;
        return r.floating ? (v - r.sum_shift) * 0.5 : v - r.sum_shift;
    }
    }
}

inline double reduced_of(const Rule &r, int ranks, size_t index)
{
    double acc = input_of(r, 0, index);
    for (int k = 1; k < ranks; ++k) {
        const double v = input_of(r, static_cast<uint64_t>(k), index);
        if (r.op == DT_SUM || r.op == DT_AVG) acc += v;
        else if (r.op == DT_PROD) acc *= v;
        else if (r.op == DT_MIN) acc = std::min(acc, v);
        else acc = std::max(acc, v);
    }
    if (r.op == DT_AVG)
        acc = r.floating ? acc / ranks : std::trunc(acc / ranks);
    return acc;
}

} // namespace

void put(dt_dtype_t dtype, void *buf, size_t i, double v)
{
    put_each(dtype, buf, i, 1, [v](size_t) { return v; });
}

double get(dt_dtype_t dtype, const void *buf, size_t i)
{
    double v = NAN;
    with_codec(dtype, [&](auto codec) {
        using C = decltype(codec);
        v = C::decode(get_as<typename C::Bits>(buf, i));
    });
    return v;
}

bool is_floating(dt_dtype_t dtype)
{
    return dtype == DT_FLOAT32 || dtype == DT_FLOAT64 || dtype == DT_FLOAT16 ||
           dtype == DT_BFLOAT16;
}

double input(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed, size_t index)
{
    return input_of(rule_of(dtype, op, ranks), seed, index);
}

double reduced(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t index)
{
    return reduced_of(rule_of(dtype, op, ranks), ranks, index);
}

void put_repeated(dt_dtype_t dtype, void *buf, size_t at, size_t n, double value)
{
    put_each(dtype, buf, at, n, [value](size_t) { return value; });
}

void put_inputs(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, uint64_t seed, size_t first,
                size_t n, void *buf, size_t at)
{
    const Rule r = rule_of(dtype, op, ranks);
    put_each(dtype, buf, at, n, [&](size_t k) { return input_of(r, seed, first + k); });
}

void put_reduced(dt_dtype_t dtype, dt_reduce_op_t op, int ranks, size_t first, size_t n,
                 void *buf, size_t at)
{
    const Rule r = rule_of(dtype, op, ranks);
    put_each(dtype, buf, at, n, [&](size_t k) { return reduced_of(r, ranks, first + k); });
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

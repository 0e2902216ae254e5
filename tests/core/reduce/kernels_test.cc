// SPDX-License-Identifier: Apache-2.0
// Every dtype x op against a scalar reference, at sizes around the vector widths, with
// dst aliasing a or b and with unaligned pointers; NaN propagation; wrapping integers;
// finish_average; argument checks.
#include "reduce/reduce.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace dt::reduce {
namespace {

template <typename T>
T ref_op(T x, T y, dt_reduce_op_t op)
{
    if constexpr (std::is_floating_point_v<T>) {
        if (op == DT_MIN || op == DT_MAX) {
            if (std::isnan(x) || std::isnan(y))
                return std::numeric_limits<T>::quiet_NaN();
            return op == DT_MIN ? std::min(x, y) : std::max(x, y);
        }
        return op == DT_PROD ? x * y : x + y;
    } else {
        using U = std::make_unsigned_t<T>;
        switch (op) {
        case DT_MIN: return std::min(x, y);
        case DT_MAX: return std::max(x, y);
        case DT_PROD: return static_cast<T>(static_cast<U>(static_cast<uint64_t>(x) *
                                                           static_cast<uint64_t>(y)));
        default: return static_cast<T>(static_cast<U>(static_cast<uint64_t>(x) +
                                                      static_cast<uint64_t>(y)));
        }
    }
}

template <typename T>
T random_value(std::mt19937_64 &rng)
{
    if constexpr (std::is_floating_point_v<T>) {
        if (rng() % 50 == 0)
            return std::numeric_limits<T>::quiet_NaN();
        return static_cast<T>(static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000) /
                              1024.0);
    } else {
        return static_cast<T>(rng());
    }
}

template <typename T>
bool same(T got, T want)
{
    if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(want))
            return std::isnan(got);
    return got == want;
}

template <typename T>
void check_dtype(dt_dtype_t dtype)
{
    std::mt19937_64 rng(1234);
    for (auto op : {DT_SUM, DT_AVG, DT_MIN, DT_MAX, DT_PROD}) {
        for (size_t n : {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 65, 127, 1000, 4099}) {
            for (int variant = 0; variant < 4; ++variant) {
                SCOPED_TRACE(testing::Message() << "dtype " << dtype << " op " << op << " n "
                                                << n << " variant " << variant);
                // One element of slack so variant 3 can start at an unaligned address.
                std::vector<T> a(n + 1), b(n + 1), out(n + 1), want(n);
                for (size_t i = 0; i <= n; ++i) {
                    a[i] = random_value<T>(rng);
                    b[i] = random_value<T>(rng);
                }
                const size_t o = variant == 3 ? 1 : 0;
                for (size_t i = 0; i < n; ++i)
                    want[i] = ref_op(a[o + i], b[o + i], op);
                T *dst = variant == 1 ? a.data() : variant == 2 ? b.data() : out.data() + o;
                reduce(dst, a.data() + o, b.data() + o, n, dtype, op);
                for (size_t i = 0; i < n; ++i)
                    ASSERT_TRUE(same(dst[i], want[i])) << "element " << i << ": got "
                                                       << +dst[i] << " want " << +want[i];
            }
        }
    }
}

TEST(Kernels, Float32) { check_dtype<float>(DT_FLOAT32); }
TEST(Kernels, Float64) { check_dtype<double>(DT_FLOAT64); }
TEST(Kernels, Int8) { check_dtype<int8_t>(DT_INT8); }
TEST(Kernels, UInt8) { check_dtype<uint8_t>(DT_UINT8); }
TEST(Kernels, Int32) { check_dtype<int32_t>(DT_INT32); }
TEST(Kernels, Int64) { check_dtype<int64_t>(DT_INT64); }

TEST(Kernels, NaNPropagatesThroughMinAndMaxFromEitherSide)
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (auto op : {DT_MIN, DT_MAX, DT_SUM, DT_PROD}) {
        float a[3] = {nan, 1.0f, nan}, b[3] = {1.0f, nan, nan}, out[3];
        reduce(out, a, b, 3, DT_FLOAT32, op);
        for (float v : out)
            EXPECT_TRUE(std::isnan(v)) << "op " << op;
        double da[2] = {std::nan(""), -1.0}, db[2] = {-5.0, std::nan("")}, dout[2];
        reduce(dout, da, db, 2, DT_FLOAT64, op);
        EXPECT_TRUE(std::isnan(dout[0]) && std::isnan(dout[1])) << "op " << op;
        uint16_t ha[2] = {0x7e00, 0x3c00}, hb[2] = {0x3c00, 0xfe00}, hout[2];
        reduce(hout, ha, hb, 2, DT_FLOAT16, op);
        EXPECT_EQ(hout[0] & 0x7e00, 0x7e00) << "op " << op;
        EXPECT_EQ(hout[1] & 0x7e00, 0x7e00) << "op " << op;
        uint16_t ba[2] = {0x7fc0, 0x3f80}, bb[2] = {0x3f80, 0xffc0}, bout[2];
        reduce(bout, ba, bb, 2, DT_BFLOAT16, op);
        EXPECT_EQ(bout[0] & 0x7fc0, 0x7fc0) << "op " << op;
        EXPECT_EQ(bout[1] & 0x7fc0, 0x7fc0) << "op " << op;
    }
}

TEST(Kernels, IntegerOverflowWraps)
{
    int32_t a32 = std::numeric_limits<int32_t>::max(), b32 = 1, o32;
    reduce(&o32, &a32, &b32, 1, DT_INT32, DT_SUM);
    EXPECT_EQ(o32, std::numeric_limits<int32_t>::min());
    int8_t a8 = 127, b8 = 1, o8;
    reduce(&o8, &a8, &b8, 1, DT_INT8, DT_SUM);
    EXPECT_EQ(o8, -128);
    a8 = -128;
    b8 = -1;
    reduce(&o8, &a8, &b8, 1, DT_INT8, DT_PROD);
    EXPECT_EQ(o8, -128);
    uint8_t u = 200, v = 100, w;
    reduce(&w, &u, &v, 1, DT_UINT8, DT_SUM);
    EXPECT_EQ(w, 44);
    int64_t a64 = std::numeric_limits<int64_t>::min(), b64 = -1, o64;
    reduce(&o64, &a64, &b64, 1, DT_INT64, DT_PROD);
    EXPECT_EQ(o64, std::numeric_limits<int64_t>::min());
}

TEST(Kernels, SixteenBitTypesAtEveryLengthAroundTheBlockSize)
{
    // The 16-bit paths work in blocks of 1024 with an 8-wide vector loop and a tail.
    for (size_t n : {1, 7, 8, 9, 1023, 1024, 1025, 2049}) {
        std::vector<uint16_t> a(n), b(n), out(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = float_to_half(static_cast<float>(i % 100));
            b[i] = float_to_half(1.0f);
        }
        reduce(out.data(), a.data(), b.data(), n, DT_FLOAT16, DT_SUM);
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(half_to_float(out[i]), static_cast<float>(i % 100 + 1)) << n << " " << i;
        for (size_t i = 0; i < n; ++i) {
            a[i] = float_to_bfloat16(static_cast<float>(i % 100));
            b[i] = float_to_bfloat16(2.0f);
        }
        reduce_into(a.data(), b.data(), n, DT_BFLOAT16, DT_PROD);
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(bfloat16_to_float(a[i]), static_cast<float>(2 * (i % 100))) << n << " " << i;
    }
}

TEST(FinishAverage, DividesEveryDtype)
{
    float f[3] = {3.0f, -1.0f, 1.0f};
    finish_average(f, 3, DT_FLOAT32, 3);
    EXPECT_EQ(f[0], 1.0f);
    EXPECT_EQ(f[1], -1.0f / 3.0f);
    EXPECT_EQ(f[2], 1.0f / 3.0f);
    double d = 1.0;
    finish_average(&d, 1, DT_FLOAT64, 4);
    EXPECT_EQ(d, 0.25);
    uint16_t h = float_to_half(3.0f);
    finish_average(&h, 1, DT_FLOAT16, 2);
    EXPECT_EQ(half_to_float(h), 1.5f);
    uint16_t bf = float_to_bfloat16(1.0f);
    finish_average(&bf, 1, DT_BFLOAT16, 3);
    EXPECT_EQ(bf, float_to_bfloat16(1.0f / 3.0f));
    int32_t i32[2] = {-7, 7};
    finish_average(i32, 2, DT_INT32, 2); // truncates toward zero
    EXPECT_EQ(i32[0], -3);
    EXPECT_EQ(i32[1], 3);
    int8_t i8 = -128;
    finish_average(&i8, 1, DT_INT8, 3);
    EXPECT_EQ(i8, -42);
    uint8_t u8 = 255;
    finish_average(&u8, 1, DT_UINT8, 300); // a divisor wider than the type
    EXPECT_EQ(u8, 0);
    int64_t i64 = std::numeric_limits<int64_t>::min();
    finish_average(&i64, 1, DT_INT64, 2);
    EXPECT_EQ(i64, std::numeric_limits<int64_t>::min() / 2);
    // Long buffers take the vector path.
    std::vector<float> big(1001, 6.0f);
    finish_average(big.data(), big.size(), DT_FLOAT32, 4);
    for (float v : big)
        ASSERT_EQ(v, 1.5f);
}

TEST(DivideFloat16, QuotientsSumWithinRangeAndStayCorrectlyRounded)
{
    // Every finite float16, divided before the sum by each rank count: the ranks'
    // quotients sum (exactly) to at most 65504 in magnitude, and a quotient differs from
    // the correctly rounded one only where that one would sum past it (then by one step,
    // toward zero).
    std::vector<uint16_t> all;
    for (uint32_t bits = 0; bits < 0x10000; ++bits)
        if ((bits & 0x7c00u) != 0x7c00u) // not inf or NaN
            all.push_back(static_cast<uint16_t>(bits));
    std::vector<uint16_t> q(all.size());
    for (int ranks = 2; ranks <= 17; ++ranks) {
        divide_float16(q.data(), all.data(), all.size(), ranks);
        for (size_t i = 0; i < all.size(); ++i) {
            const uint16_t nearest =
                float_to_half(half_to_float(all[i]) / static_cast<float>(ranks));
            ASSERT_LE(std::fabs(double{half_to_float(q[i])}) * ranks, 65504.0)
                << half_to_float(all[i]) << " averaged over " << ranks << " ranks";
            if (q[i] != nearest) {
                ASSERT_EQ(q[i], nearest - 1) << half_to_float(all[i]) << " / " << ranks;
                ASSERT_GT(std::fabs(double{half_to_float(nearest)}) * ranks, 65504.0);
            }
        }
    }
    // Up to three ranks, the sums stay finite whatever the order and the rounding of the
    // partial sums: three ranks averaging the largest float16 get 65472, not inf.
    for (int ranks = 2; ranks <= 3; ++ranks) {
        divide_float16(q.data(), all.data(), all.size(), ranks);
        for (size_t i = 0; i < all.size(); ++i) {
            float sum = half_to_float(q[i]);
            for (int r = 1; r < ranks; ++r)
                sum = half_to_float(float_to_half(sum + half_to_float(q[i])));
            ASSERT_TRUE(std::isfinite(sum)) << half_to_float(all[i]) << " / " << ranks;
        }
    }
    uint16_t big[2] = {float_to_half(65504.0f), float_to_half(-65504.0f)};
    divide_float16(big, big, 2, 3);
    EXPECT_EQ(half_to_float(big[0]), 21824.0f);
    EXPECT_EQ(half_to_float(big[1]), -21824.0f);
    // inf and NaN are left as the division makes them.
    uint16_t special[2] = {0x7c00, 0x7e00};
    divide_float16(special, special, 2, 3);
    EXPECT_EQ(special[0], 0x7c00);
    EXPECT_TRUE(std::isnan(half_to_float(special[1])));
}

TEST(Arguments, BadDtypeOpAndDivisorAreRefused)
{
    float a = 1, b = 2, o;
    try {
        reduce(&o, &a, &b, 1, static_cast<dt_dtype_t>(42), DT_SUM);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("dtype 42"), std::string::npos) << e.what();
    }
    try {
        reduce(&o, &a, &b, 1, DT_FLOAT32, static_cast<dt_reduce_op_t>(9));
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT);
    }
    try {
        finish_average(&a, 1, DT_FLOAT32, 0);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT);
    }
    reduce(nullptr, nullptr, nullptr, 0, DT_FLOAT32, DT_SUM); // count 0 touches nothing
}

} // namespace
} // namespace dt::reduce

// SPDX-License-Identifier: Apache-2.0
// The cuDNN plugin's own CUDA kernels (cudnn_kernels.cu), run on the CPU by cuda_emu, each
// against a reference written here with plain loops. Host memory stands for device memory
// and the stream is nullptr. Every case runs with blocks and threads in forward, reversed
// and shuffled order and must write the same bits in each: these kernels give each thread
// its own elements, so an order that changes a result is a race.
//
// Where the kernel's arithmetic is plain float math the reference does the same operations
// in the same order and the results must match bit for bit. This file and the kernels are
// built with -ffp-contract=off, so a * b + c stays two roundings on both sides (nvcc fuses
// it into one FMA by default, so on a GPU such results may differ in the last bit: that
// is what the GPU tests' tolerances are for; here the written arithmetic is checked).
#include "cudnn_kernels.h"
#include "cuda_emu_check.h"

#include <disttrain/plugin/common.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace emu_check;
using dtp::cudnn::FilterMove;

constexpr int kBadDtype = 99;
const int kInvalidValue = int(cudaErrorInvalidValue);

float relu_ref(float v) { return v > 0.0f ? v : 0.0f; } // +0 for -0 and NaN, as fmaxf(v, 0)

// Sizes that run no element, the float4 path alone, its tail alone, and both, over
// several blocks.
const size_t kSizes[] = {0, 1, 3, 4, 5, 8, 1027};

// ---------------------------------------------------------------------------------------
// fill

template <typename E>
void check_fill(size_t n, float value)
{
    SCOPED_TRACE(std::string(E::name) + " fill of " + std::to_string(n) + " with " + show(value));
    const auto [x] = in_every_order([&] {
        DeviceArray<typename E::T> dx(n, false);
        EXPECT_RAN(dtp::cudnn::launch_fill(nullptr, E::code, int64_t(n), dx.data(), value));
        EXPECT_TRUE(dx.guards_intact());
        return std::tuple{dx.values()};
    });
    for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(same<E>(x[i], E::put(value))) << "element " << i;
}

TEST(CudnnKernelsCpu, FillWritesTheValueRoundedToEachFloatType)
{
    for (const size_t n : {size_t(0), size_t(1), size_t(5), size_t(1027)})
        for (const float value :
             {0.0f, -0.0f, 1.5f, 1 + 0x1p-11f, 1 + 0x1p-8f, 65520.0f, -0x1p-149f, kNaN, -kInf}) {
            check_fill<F32>(n, value);
            check_fill<F16>(n, value);
            check_fill<BF16>(n, value);
        }
}

TEST(CudnnKernelsCpu, FillInt32TruncatesTheValueTowardZero)
{
    for (const size_t n : {size_t(0), size_t(1), size_t(1027)})
        for (const auto &[value, want] :
             {std::pair{0.0f, 0}, std::pair{7.9f, 7}, std::pair{-3.5f, -3},
              std::pair{100000.0f, 100000}, std::pair{-0.0f, 0}}) {
            SCOPED_TRACE("int32 fill of " + std::to_string(n) + " with " + show(value));
            const auto [x] = in_every_order([&] {
                DeviceArray<int32_t> dx(n, false);
                EXPECT_RAN(
                    dtp::cudnn::launch_fill(nullptr, DTP_INT32, int64_t(n), dx.data(), value));
                EXPECT_TRUE(dx.guards_intact());
                return std::tuple{dx.values()};
            });
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(x[i], want) << "element " << i;
        }
}

// More elements than the grid's threads (the grid stops at 4096 blocks of 256): threads
// go round the grid-stride loop (GRID_LOOP, which every kernel uses) a second time. In
// place, so an element visited twice or never shows. Forward and reverse order only: a
// million threads, the largest launch here.
TEST(CudnnKernelsCpu, ElementsBeyondTheLargestGridTakeTheGridStride)
{
    const size_t threads = 4096 * 256;
    const size_t n = threads + 1000; // a second round for the first 1000 threads
    std::vector<uint16_t> y0(n);
    for (size_t i = 0; i < n; ++i)
        y0[i] = BF16::put(float(int(i % 251) - 125));
    const auto [y] = in_every_order(
        [&] {
            DeviceArray<uint16_t> dy(y0);
            EXPECT_RAN(dtp::cudnn::launch_axpby(nullptr, DTP_BFLOAT16, int64_t(n), 2.0f, dy.data(),
                                                0.0f, dy.data()));
            EXPECT_TRUE(dy.guards_intact());
            return std::tuple{dy.values()};
        },
        {Order::reverse});
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(y[i], BF16::put(2.0f * BF16::get(y0[i]))) << "element " << i;
}

// ---------------------------------------------------------------------------------------
// cast

template <typename S, typename D>
void check_cast(const std::vector<typename S::T> &src, const char *what)
{
    SCOPED_TRACE(std::string("cast ") + S::name + " -> " + D::name + " of " + what);
    const auto [dst] = in_every_order([&] {
        DeviceArray<typename S::T> ds(src);
        DeviceArray<typename D::T> dd(src.size(), false);
        EXPECT_RAN(dtp::cudnn::launch_cast(nullptr, S::code, D::code, int64_t(src.size()),
                                           ds.data(), dd.data()));
        EXPECT_TRUE(dd.guards_intact());
        EXPECT_TRUE(same_bits(ds.values(), src)) << "the source changed";
        return std::tuple{dd.values()};
    });
    for (size_t i = 0; i < src.size(); ++i)
        ASSERT_TRUE(same<D>(dst[i], D::put(S::get(src[i]))))
            << "element " << i << ": " << show(S::get(src[i])) << " became " << show(D::get(dst[i]))
            << ", want " << show(D::get(D::put(S::get(src[i]))));
}

template <typename S, typename D>
void check_cast_sizes()
{
    for (const size_t n : {size_t(0), size_t(1), size_t(1027)})
        check_cast<S, D>(test_values<S>(n, uint32_t(n)), "test values");
}

TEST(CudnnKernelsCpu, CastConvertsEveryPairOfFloatTypesRoundingToNearestEven)
{
    check_cast_sizes<F32, F32>();
    check_cast_sizes<F32, F16>();
    check_cast_sizes<F32, BF16>();
    check_cast_sizes<F16, F32>();
    check_cast_sizes<F16, F16>();
    check_cast_sizes<F16, BF16>();
    check_cast_sizes<BF16, F32>();
    check_cast_sizes<BF16, F16>();
    check_cast_sizes<BF16, BF16>();
}

TEST(CudnnKernelsCpu, CastOfEveryHalfBitPattern)
{
    std::vector<uint16_t> every(65536);
    for (size_t i = 0; i < every.size(); ++i)
        every[i] = uint16_t(i);
    check_cast<F16, F32>(every, "every float16");
    check_cast<F16, BF16>(every, "every float16");
    check_cast<BF16, F32>(every, "every bfloat16");
    check_cast<BF16, F16>(every, "every bfloat16");
}

// ---------------------------------------------------------------------------------------
// add, add_relu, relu, relu_backward: float32 takes the float4 path when every pointer is
// on a 16-byte boundary (and its tail for n % 4), the scalar kernels otherwise.

enum class Binary { add, add_relu, relu_backward };

const char *binary_name(Binary op)
{
    return op == Binary::add ? "add" : op == Binary::add_relu ? "add_relu" : "relu_backward";
}

template <typename E>
typename E::T binary_ref(Binary op, typename E::T a, typename E::T b)
{
    switch (op) {
    case Binary::add:
        return E::put(E::get(a) + E::get(b));
    // The sum rounded to the element type first, as add then relu would give.
    case Binary::add_relu:
        return E::put(relu_ref(E::get(E::put(E::get(a) + E::get(b)))));
    case Binary::relu_backward:
        return E::put(E::get(a) > 0.0f ? E::get(b) : 0.0f);
    }
    return {};
}

template <typename E>
int launch_binary(Binary op, int dtype, size_t n, const void *a, const void *b, void *c)
{
    switch (op) {
    case Binary::add:
        return dtp::cudnn::launch_add(nullptr, dtype, int64_t(n), a, b, c);
    case Binary::add_relu:
        return dtp::cudnn::launch_add_relu(nullptr, dtype, int64_t(n), a, b, c);
    case Binary::relu_backward:
        return dtp::cudnn::launch_relu_backward(nullptr, dtype, int64_t(n), a, b, c);
    }
    return -1;
}

// misaligned: bit i set puts operand i (a, b, c) one element past a 16-byte boundary.
template <typename E>
void check_binary(Binary op, const std::vector<typename E::T> &a,
                  const std::vector<typename E::T> &b, unsigned misaligned)
{
    using T = typename E::T;
    const size_t n = a.size();
    SCOPED_TRACE(std::string(E::name) + " " + binary_name(op) + " of " + std::to_string(n) +
                 ", misaligned operands (bits a, b, c) " + std::to_string(misaligned));
    const auto [c] = in_every_order([&] {
        DeviceArray<T> da(a, misaligned & 1), db(b, misaligned & 2), dc(n, misaligned & 4);
        EXPECT_RAN(launch_binary<E>(op, E::code, n, da.data(), db.data(), dc.data()));
        EXPECT_TRUE(dc.guards_intact());
        EXPECT_TRUE(same_bits(da.values(), a) && same_bits(db.values(), b)) << "an input changed";
        return std::tuple{dc.values()};
    });
    for (size_t i = 0; i < n; ++i) {
        const T want = binary_ref<E>(op, a[i], b[i]);
        ASSERT_TRUE(same<E>(c[i], want))
            << "element " << i << " of (" << show(E::get(a[i])) << ", " << show(E::get(b[i]))
            << "): " << show(E::get(c[i])) << ", want " << show(E::get(want));
    }
}

template <typename E>
void check_binary_everywhere(Binary op)
{
    for (const size_t n : kSizes)
        for (unsigned misaligned = 0; misaligned < 8; ++misaligned) {
            const auto a = test_values<E>(n, uint32_t(n));
            // relu_backward: dy never zero, so a mask that lets a zero x through shows.
            const auto b = test_values<E>(
                n, uint32_t(n) + 7, op == Binary::relu_backward ? Values::finite : Values::edges);
            check_binary<E>(op, a, b, misaligned);
        }
}

TEST(CudnnKernelsCpu, AddOnFloat4AndScalarPathsAndEveryType)
{
    check_binary_everywhere<F32>(Binary::add);
    check_binary_everywhere<F16>(Binary::add);
    check_binary_everywhere<BF16>(Binary::add);
}

TEST(CudnnKernelsCpu, AddReluOnFloat4AndScalarPathsAndEveryType)
{
    check_binary_everywhere<F32>(Binary::add_relu);
    check_binary_everywhere<F16>(Binary::add_relu);
    check_binary_everywhere<BF16>(Binary::add_relu);
}

TEST(CudnnKernelsCpu, ReluBackwardOnFloat4AndScalarPathsAndEveryType)
{
    check_binary_everywhere<F32>(Binary::relu_backward);
    check_binary_everywhere<F16>(Binary::relu_backward);
    check_binary_everywhere<BF16>(Binary::relu_backward);
}

// relu_backward_sum: dx = a + b (rounded to the element type, as add gives it) where
// y > 0; float4 when all four pointers are on a 16-byte boundary. misaligned: bit i puts
// operand i (y, a, b, dx) one element past one.
template <typename E>
void check_relu_backward_sum(size_t n, unsigned misaligned)
{
    using T = typename E::T;
    const auto y = test_values<E>(n, uint32_t(n) + 3);
    const auto a = test_values<E>(n, uint32_t(n) + 5, Values::finite);
    const auto b = test_values<E>(n, uint32_t(n) + 9, Values::finite);
    SCOPED_TRACE(std::string(E::name) + " relu_backward_sum of " + std::to_string(n) +
                 ", misaligned operands (bits y, a, b, dx) " + std::to_string(misaligned));
    const auto [dx] = in_every_order([&] {
        DeviceArray<T> dy(y, misaligned & 1), da(a, misaligned & 2), db(b, misaligned & 4),
            ddx(n, misaligned & 8);
        EXPECT_RAN(dtp::cudnn::launch_relu_backward_sum(nullptr, E::code, int64_t(n),
                                                        dy.data(), da.data(), db.data(),
                                                        ddx.data()));
        EXPECT_TRUE(ddx.guards_intact());
        return std::tuple{ddx.values()};
    });
    for (size_t i = 0; i < n; ++i) {
        const T sum = E::put(E::get(a[i]) + E::get(b[i]));
        const T want = E::put(E::get(y[i]) > 0.0f ? E::get(sum) : 0.0f);
        ASSERT_TRUE(same<E>(dx[i], want))
            << "element " << i << " of (" << show(E::get(y[i])) << ", " << show(E::get(a[i]))
            << ", " << show(E::get(b[i])) << "): " << show(E::get(dx[i])) << ", want "
            << show(E::get(want));
    }
}

TEST(CudnnKernelsCpu, ReluBackwardOfASumOnFloat4AndScalarPathsAndEveryType)
{
    for (const size_t n : kSizes)
        for (unsigned misaligned = 0; misaligned < 16; ++misaligned) {
            check_relu_backward_sum<F32>(n, misaligned);
            check_relu_backward_sum<F16>(n, misaligned);
            check_relu_backward_sum<BF16>(n, misaligned);
        }
}

// The edges spelled out rather than computed: the ReLU mask is x > 0 (a zero of either
// sign and NaN stop the gradient), and the gradient passes as it is (-0 and NaN included).
template <typename E>
void check_relu_backward_edges(unsigned misaligned)
{
    const std::vector<float> x = {0.0f, -0.0f, kNaN, 0x1p-24f, -0x1p-24f,
                                  kInf, -kInf, 1.0f, 1.0f,     2.0f};
    const std::vector<float> dy = {3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f, -0.0f, kNaN, -5.0f};
    const std::vector<float> want = {0.0f, 0.0f, 0.0f, 3.0f, 0.0f, 3.0f, 0.0f, -0.0f, kNaN, -5.0f};
    std::vector<typename E::T> ex, edy;
    for (size_t i = 0; i < x.size(); ++i) {
        ex.push_back(E::put(x[i]));
        edy.push_back(E::put(dy[i]));
    }
    SCOPED_TRACE(std::string(E::name) + " relu_backward edges, misaligned " +
                 std::to_string(misaligned));
    const auto [dx] = in_every_order([&] {
        DeviceArray<typename E::T> dex(ex, misaligned & 1), dedy(edy, misaligned & 2),
            ddx(x.size(), misaligned & 4);
        EXPECT_RAN(dtp::cudnn::launch_relu_backward(nullptr, E::code, int64_t(x.size()), dex.data(),
                                                    dedy.data(), ddx.data()));
        return std::tuple{ddx.values()};
    });
    for (size_t i = 0; i < x.size(); ++i)
        EXPECT_TRUE(same_f32(E::get(dx[i]), want[i]))
            << "x " << show(x[i]) << ", dy " << show(dy[i]) << ": " << show(E::get(dx[i]));
}

TEST(CudnnKernelsCpu, ReluBackwardMaskIsStrictlyPositive)
{
    for (unsigned misaligned : {0u, 7u}) {
        check_relu_backward_edges<F32>(misaligned);
        check_relu_backward_edges<F16>(misaligned);
        check_relu_backward_edges<BF16>(misaligned);
    }
}

// misaligned: bit 0 for x, bit 1 for y; in place: y is x (as the plugin's batch norm
// calls it), misaligned if bit 0 is set.
template <typename E>
void check_relu(const std::vector<typename E::T> &x, unsigned misaligned, bool in_place = false)
{
    using T = typename E::T;
    const size_t n = x.size();
    SCOPED_TRACE(std::string(E::name) + " relu of " + std::to_string(n) +
                 ", misaligned (bits x, y) " + std::to_string(misaligned) +
                 (in_place ? ", in place" : ""));
    const auto [y] = in_every_order([&] {
        DeviceArray<T> dx(x, misaligned & 1), dy(n, misaligned & 2);
        DeviceArray<T> &out = in_place ? dx : dy;
        EXPECT_RAN(dtp::cudnn::launch_relu(nullptr, E::code, int64_t(n), dx.data(), out.data()));
        EXPECT_TRUE(out.guards_intact());
        EXPECT_TRUE(in_place || same_bits(dx.values(), x)) << "the input changed";
        return std::tuple{out.values()};
    });
    for (size_t i = 0; i < n; ++i) {
        const T want = E::put(relu_ref(E::get(x[i])));
        ASSERT_TRUE(same<E>(y[i], want))
            << "element " << i << ": relu(" << show(E::get(x[i])) << ") = " << show(E::get(y[i]));
    }
}

TEST(CudnnKernelsCpu, ReluOnFloat4AndScalarPathsAndEveryType)
{
    for (const size_t n : kSizes)
        for (unsigned misaligned = 0; misaligned < 4; ++misaligned) {
            check_relu<F32>(test_values<F32>(n, uint32_t(n)), misaligned);
            check_relu<F16>(test_values<F16>(n, uint32_t(n)), misaligned);
            check_relu<BF16>(test_values<BF16>(n, uint32_t(n)), misaligned);
        }
    for (const size_t n : kSizes)
        for (const unsigned misaligned : {0u, 1u}) {
            check_relu<F32>(test_values<F32>(n, uint32_t(n)), misaligned, true);
            check_relu<F16>(test_values<F16>(n, uint32_t(n)), misaligned, true);
        }
}

TEST(CudnnKernelsCpu, ReluOfZerosAndNaNIsPositiveZero)
{
    // -0 and NaN give +0 bit for bit: fmaxf(v, 0) returns the non-NaN operand.
    const std::vector<float> x = {-0.0f, 0.0f, kNaN, -kNaN, -0x1p-149f, 0x1p-149f, kInf};
    const std::vector<uint32_t> want = {0, 0, 0, 0, 0, 1, 0x7f800000};
    for (unsigned misaligned : {0u, 3u}) {
        const auto [y] = in_every_order([&] {
            DeviceArray<float> dx(x, misaligned & 1), dy(x.size(), misaligned & 2);
            EXPECT_RAN(dtp::cudnn::launch_relu(nullptr, DTP_FLOAT32, int64_t(x.size()), dx.data(),
                                               dy.data()));
            return std::tuple{dy.values()};
        });
        for (size_t i = 0; i < x.size(); ++i)
            EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), want[i]) << "relu(" << show(x[i]) << ")";
    }
}

// ---------------------------------------------------------------------------------------
// axpby

template <typename E>
void check_axpby(size_t n, float alpha, float beta, bool in_place)
{
    using T = typename E::T;
    SCOPED_TRACE(std::string(E::name) + " axpby of " + std::to_string(n) + ", alpha " +
                 show(alpha) + ", beta " + show(beta) + (in_place ? ", in place" : ""));
    const auto x = test_values<E>(n, 11);
    // beta == 0 must not read y: NaN there shows if it does (0 * NaN is NaN).
    const auto y = in_place       ? x
                   : beta == 0.0f ? std::vector<T>(n, E::put(kNaN))
                                  : test_values<E>(n, 12);
    const auto [out] = in_every_order([&] {
        DeviceArray<T> dx(x), dy(y);
        T *px = in_place ? dy.data() : dx.data();
        EXPECT_RAN(
            dtp::cudnn::launch_axpby(nullptr, E::code, int64_t(n), alpha, px, beta, dy.data()));
        EXPECT_TRUE(dy.guards_intact());
        EXPECT_TRUE(same_bits(dx.values(), x)) << "x changed";
        return std::tuple{dy.values()};
    });
    for (size_t i = 0; i < n; ++i) {
        const float xi = E::get(x[i]);
        const T want = beta == 0.0f ? E::put(alpha * xi) : E::put(alpha * xi + beta * E::get(y[i]));
        ASSERT_TRUE(same<E>(out[i], want))
            << "element " << i << ": x " << show(xi) << ", y " << show(E::get(y[i])) << ": "
            << show(E::get(out[i])) << ", want " << show(E::get(want));
    }
}

template <typename E>
void check_axpby_cases()
{
    for (const size_t n : {size_t(0), size_t(1), size_t(5), size_t(1027)}) {
        check_axpby<E>(n, 0.5f, 0.0f, false);
        check_axpby<E>(n, 0.0f, 0.0f, false);
        check_axpby<E>(n, -1.25f, 0.75f, false);
        check_axpby<E>(n, 1.0f, -0.0f, false); // -0 == 0: y still unread
        check_axpby<E>(n, 3.0f, 0.0f, true);   // the plugin's scale: x and y the same array
        check_axpby<E>(n, 3.0f, 2.0f, true);
    }
}

TEST(CudnnKernelsCpu, AxpbyInEveryTypeAndBetaZeroReadsNoY)
{
    check_axpby_cases<F32>();
    check_axpby_cases<F16>();
    check_axpby_cases<BF16>();
}

// ---------------------------------------------------------------------------------------
// bias_add: y (rows, ch, spatial) += bias[ch]

template <typename E>
void check_bias_add(size_t rows, size_t ch, size_t sp)
{
    using T = typename E::T;
    const size_t n = rows * ch * sp;
    SCOPED_TRACE(std::string(E::name) + " bias_add of " + std::to_string(rows) + " x " +
                 std::to_string(ch) + " x " + std::to_string(sp));
    const auto y = test_values<E>(n, 21);
    std::vector<float> bias(ch);
    for (size_t j = 0; j < ch; ++j)
        bias[j] = float(j + 1) * 0.375f - 1.0f;
    const auto [out] = in_every_order([&] {
        DeviceArray<T> dy(y);
        DeviceArray<float> db(bias);
        EXPECT_RAN(dtp::cudnn::launch_bias_add(nullptr, E::code, int64_t(rows), int64_t(ch),
                                               int64_t(sp), dy.data(), db.data()));
        EXPECT_TRUE(dy.guards_intact());
        EXPECT_TRUE(same_bits(db.values(), bias)) << "the bias changed";
        return std::tuple{dy.values()};
    });
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < ch; ++j)
            for (size_t s = 0; s < sp; ++s) {
                const size_t i = (r * ch + j) * sp + s;
                const T want = E::put(E::get(y[i]) + bias[j]);
                ASSERT_TRUE(same<E>(out[i], want))
                    << "row " << r << ", channel " << j << ", position " << s << ": "
                    << show(E::get(out[i])) << ", want " << show(E::get(want));
            }
}

TEST(CudnnKernelsCpu, BiasAddPerChannelOfNCHW)
{
    for (const auto &[rows, ch, sp] :
         {std::tuple{2, 3, 5}, std::tuple{3, 5, 1}, std::tuple{1, 1, 1}, std::tuple{4, 7, 37},
          std::tuple{0, 3, 4}}) {
        check_bias_add<F32>(rows, ch, sp);
        check_bias_add<F16>(rows, ch, sp);
        check_bias_add<BF16>(rows, ch, sp);
    }
}

// ---------------------------------------------------------------------------------------
// filter_convert: (K, C, RS) <-> (K, RS, C) or kept, converting the element type

const char *move_name(FilterMove move)
{
    return move == FilterMove::keep               ? "keep"
           : move == FilterMove::to_channels_last ? "to_channels_last"
                                                  : "from_channels_last";
}

template <typename S, typename D>
void check_filter_convert(size_t k, size_t c, size_t rs, FilterMove move)
{
    SCOPED_TRACE(std::string("filter ") + S::name + " -> " + D::name + ", " + move_name(move) +
                 ", k " + std::to_string(k) + ", c " + std::to_string(c) + ", rs " +
                 std::to_string(rs));
    const size_t n = k * c * rs;
    const auto src = test_values<S>(n, 31);
    const auto [dst] = in_every_order([&] {
        DeviceArray<typename S::T> ds(src);
        DeviceArray<typename D::T> dd(n, false);
        EXPECT_RAN(dtp::cudnn::launch_filter_convert(nullptr, S::code, D::code, int64_t(k),
                                                     int64_t(c), int64_t(rs), ds.data(), dd.data(),
                                                     move));
        EXPECT_TRUE(dd.guards_intact());
        return std::tuple{dd.values()};
    });
    for (size_t kk = 0; kk < k; ++kk)
        for (size_t ch = 0; ch < c; ++ch)
            for (size_t tap = 0; tap < rs; ++tap) {
                const size_t kcrs = (kk * c + ch) * rs + tap, krsc = (kk * rs + tap) * c + ch;
                const size_t to = move == FilterMove::to_channels_last ? krsc : kcrs;
                const size_t from = move == FilterMove::from_channels_last ? krsc : kcrs;
                const auto want = D::put(S::get(src[from]));
                ASSERT_TRUE(same<D>(dst[to], want))
                    << "output " << kk << ", channel " << ch << ", tap " << tap << ": "
                    << show(D::get(dst[to])) << ", want " << show(D::get(want));
            }
}

template <typename S, typename D>
void check_filter_moves()
{
    for (const FilterMove move :
         {FilterMove::keep, FilterMove::to_channels_last, FilterMove::from_channels_last})
        for (const auto &[k, c, rs] :
             {std::tuple{3, 4, 9}, std::tuple{2, 5, 1}, std::tuple{5, 3, 7}, std::tuple{1, 1, 1}})
            check_filter_convert<S, D>(k, c, rs, move);
}

TEST(CudnnKernelsCpu, FilterConvertMovesAndConverts)
{
    check_filter_moves<F32, F32>();
    check_filter_moves<F32, F16>();
    check_filter_moves<F32, BF16>();
    check_filter_moves<F16, F32>();
    check_filter_moves<BF16, F32>();
    check_filter_moves<BF16, BF16>();
}

TEST(CudnnKernelsCpu, FilterToChannelsLastAndBackIsTheIdentity)
{
    const int64_t k = 4, c = 6, rs = 9;
    const auto src = test_values<F32>(size_t(k * c * rs), 41);
    DeviceArray<float> ds(src), mid(src.size(), false), back(src.size(), false);
    ASSERT_EQ(dtp::cudnn::launch_filter_convert(nullptr, DTP_FLOAT32, DTP_FLOAT32, k, c, rs,
                                                ds.data(), mid.data(),
                                                FilterMove::to_channels_last),
              0);
    EXPECT_FALSE(same_bits(mid.values(), src)) << "the move did not move anything";
    ASSERT_EQ(dtp::cudnn::launch_filter_convert(nullptr, DTP_FLOAT32, DTP_FLOAT32, k, c, rs,
                                                mid.data(), back.data(),
                                                FilterMove::from_channels_last),
              0);
    EXPECT_TRUE(same_bits(back.values(), src));
}

// ---------------------------------------------------------------------------------------
// softmax_xent and its backward pass

struct XentCase {
    int64_t rows, k;
    std::vector<float> logits;
    std::vector<int32_t> labels;
};

// Rows with two equal maxima (labelled at the first, then at the second), large logits
// that overflow a double exp() unless the maximum is subtracted first, a -inf logit, then
// pseudo-random rows over several blocks.
XentCase xent_case()
{
    XentCase x{300, 10, {}, {}};
    std::mt19937 rng(51);
    std::uniform_real_distribution<float> uniform(-8.0f, 8.0f);
    x.logits.resize(size_t(x.rows * x.k));
    x.labels.resize(size_t(x.rows));
    for (int64_t r = 0; r < x.rows; ++r) {
        for (int64_t j = 0; j < x.k; ++j)
            x.logits[size_t(r * x.k + j)] = uniform(rng);
        x.labels[size_t(r)] = int32_t(rng() % uint32_t(x.k));
    }
    float *row = x.logits.data();
    row[2] = row[5] = 9.0f; // rows 0 and 1: maxima at 2 and 5
    std::copy(row, row + x.k, row + x.k);
    x.labels[0] = 2;
    x.labels[1] = 5;
    for (int64_t j = 0; j < x.k; ++j)
        x.logits[size_t(2 * x.k + j)] = 800.0f + 2.0f * float(j);
    x.labels[2] = 8;
    x.logits[size_t(3 * x.k + 4)] = -kInf;
    x.labels[3] = 1;
    return x;
}

struct XentOut {
    std::vector<float> probs, loss;
    std::vector<int32_t> hit;
    int32_t bad;
};

XentOut run_xent(const XentCase &x, int32_t bad_before)
{
    const auto [probs, loss, hit, bad] = in_every_order([&] {
        DeviceArray<float> dl(x.logits), dp(x.logits.size(), false), dloss(size_t(x.rows), false);
        DeviceArray<int32_t> dlab(x.labels), dhit(size_t(x.rows), false),
            dbad(std::vector<int32_t>{bad_before});
        EXPECT_RAN(dtp::cudnn::launch_softmax_xent(nullptr, x.rows, x.k, dl.data(), dlab.data(),
                                                   dp.data(), dloss.data(), dhit.data(),
                                                   dbad.data()));
        EXPECT_TRUE(dp.guards_intact() && dloss.guards_intact() && dhit.guards_intact() &&
                    dbad.guards_intact());
        return std::tuple{dp.values(), dloss.values(), dhit.values(), dbad.values()};
    });
    return {probs, loss, hit, bad[0]};
}

// The reference subtracts the row's maximum in float, as the kernel does (and PyTorch);
// exp, the sum and log are in long double. The kernel's are in double: the results may
// then round to neighbouring floats, hence a tolerance of two float ulps.
void check_xent_rows(const XentCase &x, const XentOut &out)
{
    const double tol = 0x1p-22;
    for (int64_t r = 0; r < x.rows; ++r) {
        const float *xr = x.logits.data() + r * x.k;
        float mx = xr[0];
        int64_t first_max = 0;
        for (int64_t j = 1; j < x.k; ++j)
            if (xr[j] > mx) {
                mx = xr[j];
                first_max = j;
            }
        long double sum = 0;
        for (int64_t j = 0; j < x.k; ++j)
            sum += std::exp((long double)(xr[j] - mx));
        for (int64_t j = 0; j < x.k; ++j) {
            const long double want = std::exp((long double)(xr[j] - mx)) / sum;
            ASSERT_NEAR(out.probs[size_t(r * x.k + j)], double(want), tol * double(want))
                << "row " << r << ", class " << j;
        }
        const int32_t label = x.labels[size_t(r)];
        if (label < 0 || label >= x.k) {
            EXPECT_EQ(out.loss[size_t(r)], 0.0f) << "row " << r << " (label out of range)";
            EXPECT_EQ(out.hit[size_t(r)], 0) << "row " << r << " (label out of range)";
            continue;
        }
        const long double want = std::log(sum) - (long double)(xr[label] - mx);
        EXPECT_NEAR(out.loss[size_t(r)], double(want), tol * double(want) + 1e-12) << "row " << r;
        EXPECT_EQ(out.hit[size_t(r)], int32_t(first_max == label)) << "row " << r;
    }
}

TEST(CudnnKernelsCpu, SoftmaxXentMatchesALongDoubleReference)
{
    const XentCase x = xent_case();
    const XentOut out = run_xent(x, 42);
    check_xent_rows(x, out);
    EXPECT_EQ(out.bad, 42) << "bad_label written although every label is in range";
    EXPECT_EQ(out.hit[0], 1) << "two equal maxima: the first one is the prediction";
    EXPECT_EQ(out.hit[1], 0) << "two equal maxima: the first one is the prediction";
    for (int64_t j = 0; j < x.k; ++j)
        EXPECT_TRUE(std::isfinite(out.probs[size_t(2 * x.k + j)])) << "large logits overflowed";
    EXPECT_EQ(out.probs[size_t(3 * x.k + 4)], 0.0f) << "exp(-inf) is 0";
}

TEST(CudnnKernelsCpu, SoftmaxXentSetsBadLabelForALabelOutOfRange)
{
    XentCase x = xent_case();
    x.labels[7] = -1;
    x.labels[200] = int32_t(x.k);
    const XentOut out = run_xent(x, 0);
    EXPECT_EQ(out.bad, 1);
    check_xent_rows(x, out);
    XentCase good = x;
    good.labels[7] = good.labels[200] = 0;
    const XentOut good_out = run_xent(good, 0);
    EXPECT_EQ(good_out.bad, 0);
    EXPECT_TRUE(same_bits(out.probs, good_out.probs)) << "a bad label changed the probabilities";
}

TEST(CudnnKernelsCpu, SoftmaxXentOfOneClassAndOfANaNLogit)
{
    XentCase one{3, 1, {-5.0f, 0.0f, 7.0f}, {0, 0, 0}};
    const XentOut out = run_xent(one, 0);
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(out.probs[size_t(r)], 1.0f);
        EXPECT_EQ(out.loss[size_t(r)], 0.0f);
        EXPECT_EQ(out.hit[size_t(r)], 1);
    }
    // NaN in a row reaches its loss: training must see it rather than a finite number.
    XentCase nan{2, 4, {1.0f, 2.0f, kNaN, 0.5f, 1.0f, 2.0f, 3.0f, 0.5f}, {1, 1}};
    const XentOut nan_out = run_xent(nan, 0);
    EXPECT_TRUE(std::isnan(nan_out.loss[0])) << show(nan_out.loss[0]);
    EXPECT_TRUE(std::isfinite(nan_out.loss[1])) << "a NaN in row 0 reached row 1";
    EXPECT_EQ(nan_out.bad, 0);
}

TEST(CudnnKernelsCpu, SoftmaxXentBackwardIsProbsMinusOneHotTimesScale)
{
    const int64_t rows = 70, k = 13;
    const auto probs = test_values<F32>(size_t(rows * k), 61, Values::finite);
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
        labels[size_t(r)] = int32_t((r * 5) % k);
    labels[3] = -1; // out of range: no one-hot, as the forward pass flagged it
    labels[4] = int32_t(k);
    for (const float scale : {1.0f / 70.0f, -2.0f}) {
        const auto [d] = in_every_order([&] {
            DeviceArray<float> dp(probs), dd(probs.size(), false);
            DeviceArray<int32_t> dl(labels);
            EXPECT_RAN(dtp::cudnn::launch_softmax_xent_backward(nullptr, rows, k, dp.data(),
                                                                dl.data(), scale, dd.data()));
            EXPECT_TRUE(dd.guards_intact());
            return std::tuple{dd.values()};
        });
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < k; ++j) {
                const size_t i = size_t(r * k + j);
                const float want = (probs[i] - (j == labels[size_t(r)] ? 1.0f : 0.0f)) * scale;
                ASSERT_TRUE(same_f32(d[i], want)) << "row " << r << ", class " << j << ": "
                                                  << show(d[i]) << ", want " << show(want);
            }
    }
}

// ---------------------------------------------------------------------------------------
// sgd and adam: float32 state updated in place

struct SgdCase {
    float lr, momentum, wd;
    int nesterov;
};

TEST(CudnnKernelsCpu, SgdWithAndWithoutMomentumNesterovAndWeightDecay)
{
    const size_t n = 1027;
    const auto w0 = test_values<F32>(n, 71, Values::finite);
    const auto g1 = test_values<F32>(n, 72, Values::finite),
               g2 = test_values<F32>(n, 73, Values::finite);
    for (const SgdCase p : {SgdCase{0.1f, 0.0f, 0.0f, 0}, SgdCase{0.1f, 0.0f, 1e-2f, 0},
                            SgdCase{0.05f, 0.9f, 0.0f, 0}, SgdCase{0.05f, 0.9f, 5e-4f, 0},
                            SgdCase{0.05f, 0.9f, 0.0f, 1}, SgdCase{0.05f, 0.9f, 5e-4f, 1}}) {
        SCOPED_TRACE("sgd lr " + show(p.lr) + ", momentum " + show(p.momentum) + ", wd " +
                     show(p.wd) + ", nesterov " + std::to_string(p.nesterov));
        // Without momentum the buffer is neither read nor written: NaN there shows.
        const std::vector<float> buf0(n, p.momentum == 0.0f ? kNaN : 0.0f);
        const auto [w, buf] = in_every_order([&] {
            DeviceArray<float> dw(w0), dbuf(buf0), dg1(g1), dg2(g2);
            for (DeviceArray<float> *g : {&dg1, &dg2}) // two steps: the second reads the buffer
                EXPECT_RAN(dtp::cudnn::launch_sgd(nullptr, int64_t(n), p.lr, p.momentum, p.wd,
                                                  p.nesterov, dw.data(), g->data(), dbuf.data()));
            EXPECT_TRUE(dw.guards_intact() && dbuf.guards_intact());
            return std::tuple{dw.values(), dbuf.values()};
        });
        for (size_t i = 0; i < n; ++i) {
            // PyTorch's SGD (dampening 0), in float, in the order it writes.
            float wi = w0[i], bi = buf0[i];
            for (const float gi : {g1[i], g2[i]}) {
                float d = gi + p.wd * wi;
                if (p.momentum != 0.0f) {
                    bi = p.momentum * bi + d;
                    d = p.nesterov ? d + p.momentum * bi : bi;
                }
                wi = wi - p.lr * d;
            }
            ASSERT_TRUE(same_f32(w[i], wi))
                << "w[" << i << "]: " << show(w[i]) << ", want " << show(wi);
            ASSERT_EQ(std::bit_cast<uint32_t>(buf[i]), std::bit_cast<uint32_t>(bi))
                << "buf[" << i << "]: " << show(buf[i]) << ", want " << show(bi);
        }
    }
}

struct AdamCase {
    float lr, b1, b2, eps, wd;
    int decoupled;
    int step;
};

TEST(CudnnKernelsCpu, AdamCoupledAndDecoupledWeightDecayWithBiasCorrection)
{
    const size_t n = 1027;
    const auto w0 = test_values<F32>(n, 81, Values::finite),
               g = test_values<F32>(n, 82, Values::finite);
    auto m_later = test_values<F32>(n, 83, Values::finite),
         v_later = test_values<F32>(n, 84, Values::finite);
    for (float &v : v_later)
        v = v * v * 0.01f; // second moments are squares
    for (const AdamCase p : {AdamCase{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 1},
                             AdamCase{1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 0, 1},
                             AdamCase{1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 1, 1},
                             AdamCase{2e-3f, 0.8f, 0.99f, 1e-6f, 0.1f, 0, 7},
                             AdamCase{2e-3f, 0.8f, 0.99f, 1e-6f, 0.1f, 1, 7}}) {
        SCOPED_TRACE("adam lr " + show(p.lr) + ", wd " + show(p.wd) + ", decoupled " +
                     std::to_string(p.decoupled) + ", step " + std::to_string(p.step));
        // The bias corrections as cudnn_plugin.cc's adam_update computes them.
        const double t = double(p.step);
        const float c1 = float(1.0 - std::pow(double(p.b1), t));
        const float root_c2 = std::sqrt(float(1.0 - std::pow(double(p.b2), t)));
        const std::vector<float> m0 = p.step == 1 ? std::vector<float>(n, 0.0f) : m_later;
        const std::vector<float> v0 = p.step == 1 ? std::vector<float>(n, 0.0f) : v_later;
        const auto [w, m, v] = in_every_order([&] {
            DeviceArray<float> dw(w0), dg(g), dm(m0), dv(v0);
            EXPECT_RAN(dtp::cudnn::launch_adam(nullptr, int64_t(n), p.lr, p.b1, p.b2, p.eps, p.wd,
                                               p.decoupled, c1, root_c2, dw.data(), dg.data(),
                                               dm.data(), dv.data()));
            EXPECT_TRUE(dw.guards_intact() && dm.guards_intact() && dv.guards_intact());
            EXPECT_TRUE(same_bits(dg.values(), g)) << "the gradient changed";
            return std::tuple{dw.values(), dm.values(), dv.values()};
        });
        for (size_t i = 0; i < n; ++i) {
            // The moments are float math in PyTorch's order: exact.
            const float gi = p.decoupled ? g[i] : g[i] + p.wd * w0[i];
            const float mi = p.b1 * m0[i] + (1.0f - p.b1) * gi;
            const float vi = p.b2 * v0[i] + (1.0f - p.b2) * gi * gi;
            ASSERT_TRUE(same_f32(m[i], mi))
                << "m[" << i << "]: " << show(m[i]) << ", want " << show(mi);
            ASSERT_TRUE(same_f32(v[i], vi))
                << "v[" << i << "]: " << show(v[i]) << ", want " << show(vi);
            // The weight in double (PyTorch's Adam and AdamW): the kernel's float chain
            // (1 - lr * wd, sqrtf, two divisions, a product) rounds at each step, so it
            // may differ by a few float roundings of the step and one of the weight.
            const double decayed =
                p.decoupled ? double(w0[i]) * (1.0 - double(p.lr) * p.wd) : w0[i];
            const double step = double(p.lr) / c1 * mi / (std::sqrt(double(vi)) / root_c2 + p.eps);
            const double want = decayed - step;
            ASSERT_NEAR(w[i], want, 4e-7 * std::fabs(want) + 1e-6 * std::fabs(step) + 1e-30)
                << "w[" << i << "] from " << show(w0[i]) << ", step " << step;
        }
    }
}

// ---------------------------------------------------------------------------------------
// dtypes a kernel does not take: cudaErrorInvalidValue and nothing written

TEST(CudnnKernelsCpu, EveryLaunchRefusesADtypeItDoesNotTakeAndWritesNothing)
{
    using namespace dtp::cudnn;
    const size_t n = 8;
    for (const bool misaligned : {false, true}) {
        DeviceArray<float> a(n, misaligned), b(n, misaligned), c(n, misaligned), bias(n, false);
        const auto untouched = c.values();
        const auto check = [&](int rc, const char *what) {
            EXPECT_EQ(rc, kInvalidValue) << what;
            EXPECT_TRUE(same_bits(c.values(), untouched) && c.guards_intact())
                << what << " wrote its output";
        };
        for (const int bad : {kBadDtype, -1, int(DTP_INT32)}) {
            if (bad != DTP_INT32)
                check(launch_fill(nullptr, bad, n, c.data(), 1.0f), "fill");
            check(launch_cast(nullptr, bad, DTP_FLOAT32, n, a.data(), c.data()), "cast from");
            check(launch_cast(nullptr, DTP_FLOAT32, bad, n, a.data(), c.data()), "cast to");
            check(launch_add(nullptr, bad, n, a.data(), b.data(), c.data()), "add");
            check(launch_add_relu(nullptr, bad, n, a.data(), b.data(), c.data()), "add_relu");
            check(launch_axpby(nullptr, bad, n, 1.0f, a.data(), 1.0f, c.data()), "axpby");
            check(launch_bias_add(nullptr, bad, 1, 2, 4, c.data(), bias.data()), "bias_add");
            check(launch_filter_convert(nullptr, bad, DTP_FLOAT32, 2, 2, 2, a.data(), c.data(),
                                        FilterMove::keep),
                  "filter_convert from");
            check(launch_filter_convert(nullptr, DTP_FLOAT32, bad, 2, 2, 2, a.data(), c.data(),
                                        FilterMove::to_channels_last),
                  "filter_convert to");
            check(launch_relu(nullptr, bad, n, a.data(), c.data()), "relu");
            check(launch_relu_backward(nullptr, bad, n, a.data(), b.data(), c.data()),
                  "relu_backward");
        }
    }
}

} // namespace

// SPDX-License-Identifier: Apache-2.0
// The CPU runner of CUDA kernels (cuda_emu.h): the indices every thread sees, barriers
// that hold every thread of a block in every order, and the errors a GPU would leave
// undefined or refuse: a barrier some threads skip or reach at another line, a block or
// grid out of CUDA's limits, a race that the order of the threads exposes.
#include "cuda_emu.h"
#include "cuda_emu_selftest_kernels.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace {

using cuda_emu::Order;

class CudaEmu : public ::testing::TestWithParam<Order> {
  protected:
    void SetUp() override { cuda_emu::set_order(GetParam()); }
    void TearDown() override { cuda_emu::set_order(Order::forward); }
};

TEST_P(CudaEmu, EveryThreadSeesItsIndices)
{
    const unsigned gx = 3, gy = 2, bx = 5, by = 4;
    std::vector<int32_t> out(8 * gx * gy * bx * by, -1);
    ASSERT_EQ(emu_test::indices(gx, gy, bx, by, out.data()), 0) << cuda_emu::last_message();
    size_t at = 0;
    for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x)
            for (unsigned ty = 0; ty < by; ++ty)
                for (unsigned tx = 0; tx < bx; ++tx, at += 8) {
                    const std::vector<int32_t> want = {int32_t(x), int32_t(y), int32_t(tx),
                                                       int32_t(ty), int32_t(bx), int32_t(by),
                                                       int32_t(gx), int32_t(gy)};
                    EXPECT_EQ(std::vector<int32_t>(out.begin() + at, out.begin() + at + 8), want)
                        << "block (" << x << ", " << y << "), thread (" << tx << ", " << ty
                        << ")";
                }
}

TEST_P(CudaEmu, BarriersHoldEveryThreadOfTheBlock)
{
    for (const int threads : {1, 32, 256, 1024}) {
        const int blocks = 5;
        std::vector<int64_t> in(size_t(blocks) * threads);
        std::iota(in.begin(), in.end(), int64_t(1));
        std::vector<int64_t> out(blocks, -1);
        ASSERT_EQ(emu_test::block_sums(blocks, threads, in.data(), out.data()), 0)
            << cuda_emu::last_message();
        for (int b = 0; b < blocks; ++b) {
            const int64_t first = int64_t(b) * threads + 1, last = first + threads - 1;
            EXPECT_EQ(out[b], (first + last) * threads / 2) << threads << " threads, block " << b;
        }
    }
}

TEST_P(CudaEmu, DeducedKernelTemplates)
{
    std::vector<double> out(200, 0.0);
    ASSERT_EQ(emu_test::fill_deduced(int64_t(out.size()), out.data(), 2.5), 0);
    for (double v : out)
        EXPECT_EQ(v, 2.5);
}

TEST_P(CudaEmu, BarrierSkippedByReturningThreadsIsAnError)
{
    EXPECT_EQ(emu_test::early_return_before_barrier(64), int(cudaErrorLaunchFailure));
    EXPECT_NE(cuda_emu::last_message().find("never by"), std::string::npos)
        << cuda_emu::last_message();
    EXPECT_NE(cuda_emu::last_message().find("which returned"), std::string::npos);
}

TEST_P(CudaEmu, BarriersAtTwoLinesAreAnError)
{
    EXPECT_EQ(emu_test::barriers_at_two_lines(64), int(cudaErrorLaunchFailure));
    EXPECT_NE(cuda_emu::last_message().find("but at line"), std::string::npos)
        << cuda_emu::last_message();
}

INSTANTIATE_TEST_SUITE_P(Orders, CudaEmu,
                         ::testing::Values(Order::forward, Order::reverse, Order::shuffle),
                         [](const auto &info) {
                             return info.param == Order::forward   ? std::string("Forward")
                                    : info.param == Order::reverse ? std::string("Reverse")
                                                                   : std::string("Shuffle");
                         });

TEST(CudaEmuConfig, RefusesWhatCudaRefuses)
{
    EXPECT_EQ(emu_test::empty_launch(1, 1, 1025, 1), int(cudaErrorInvalidConfiguration));
    EXPECT_NE(cuda_emu::last_message().find("1025 x 1 x 1 threads"), std::string::npos)
        << cuda_emu::last_message();
    EXPECT_EQ(emu_test::empty_launch(1, 1, 64, 32), int(cudaErrorInvalidConfiguration));
    EXPECT_EQ(emu_test::empty_launch(0, 1, 32, 1), int(cudaErrorInvalidConfiguration));
    EXPECT_EQ(emu_test::empty_launch(1, 65536, 32, 1), int(cudaErrorInvalidConfiguration));
    EXPECT_NE(cuda_emu::last_message().find("65536"), std::string::npos);
}

TEST(CudaEmuConfig, RefusesBlocksBeyondTheKernelsLaunchBounds)
{
    EXPECT_EQ(emu_test::bounded_launch(128), 0) << cuda_emu::last_message();
    EXPECT_EQ(emu_test::bounded_launch(129), int(cudaErrorLaunchOutOfResources));
    EXPECT_NE(cuda_emu::last_message().find("__launch_bounds__ allow 128"), std::string::npos)
        << cuda_emu::last_message();
}

TEST(CudaEmuConfig, LastErrorIsClearedByReading)
{
    EXPECT_EQ(emu_test::empty_launch(1, 1, 2048, 1), int(cudaErrorInvalidConfiguration));
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(emu_test::empty_launch(2, 3, 32, 2), 0);
    EXPECT_EQ(cuda_emu::last_message(), "");
}

// A reduction without its barriers gives wrong sums in some order of the threads: the
// way the kernel tests find races is to compare the orders' results.
TEST(CudaEmuRace, MissingBarriersShowAsWrongResults)
{
    const int blocks = 2, threads = 256;
    std::vector<int64_t> in(size_t(blocks) * threads);
    std::iota(in.begin(), in.end(), int64_t(1));
    const int64_t want0 = int64_t(threads) * (threads + 1) / 2;
    int wrong = 0;
    for (const Order order : {Order::forward, Order::reverse, Order::shuffle}) {
        cuda_emu::set_order(order);
        std::vector<int64_t> out(blocks, -1);
        ASSERT_EQ(emu_test::block_sums_racy(blocks, threads, in.data(), out.data()), 0);
        wrong += out[0] != want0;
    }
    cuda_emu::set_order(Order::forward);
    EXPECT_GT(wrong, 0);
}

} // namespace

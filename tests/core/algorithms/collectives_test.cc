// SPDX-License-Identifier: Apache-2.0
// broadcast, allgather, reduce-scatter, alltoall and barrier on 1..5 ranks.
#include "algorithms/algorithms.h"
#include "harness.h"
#include "reference.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

namespace dt::test {
namespace {

// Byte pattern that differs per rank, block and position.
Bytes pattern(size_t bytes, int rank, int block = 0)
{
    Bytes out(bytes);
    for (size_t i = 0; i < bytes; ++i)
        out[i] = static_cast<std::byte>((i * 31 + static_cast<size_t>(rank) * 101 +
                                         static_cast<size_t>(block) * 7 + 3) &
                                        0xff);
    return out;
}

const size_t kSizes[] = {0, 1, 7, 1001, (size_t{1} << 20) + 5};

TEST(Broadcast, EveryRootRankCountAndSize)
{
    // 1 MiB + 5 takes the pipelined chain (with a short last segment), the rest the tree.
    for (int p = 1; p <= 5; ++p) {
        for (int root = 0; root < p; ++root) {
            for (size_t bytes : kSizes) {
                SCOPED_TRACE(testing::Message() << "ranks=" << p << " root=" << root
                                                << " bytes=" << bytes);
                std::vector<Bytes> bufs;
                for (int r = 0; r < p; ++r)
                    bufs.push_back(r == root ? pattern(bytes, root) : Bytes(bytes, std::byte{0}));
                expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
                    algo::broadcast(comm, bufs[comm.rank()].data(), bytes, root);
                }));
                for (int r = 0; r < p; ++r)
                    EXPECT_TRUE(bufs[r] == pattern(bytes, root)) << "rank " << r;
            }
        }
    }
}

TEST(Broadcast, RootOutOfRangeIsRefused)
{
    std::byte b{};
    auto outcomes = run_ranks(2, [&](algo::Comm &comm) { algo::broadcast(comm, &b, 1, 2); });
    EXPECT_EQ(outcomes[0].status, DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(outcomes[0].message.find("root 2"), std::string::npos) << outcomes[0].message;
}

TEST(AllgatherRing, InAndOutOfPlace)
{
    for (int p = 1; p <= 5; ++p) {
        for (size_t bytes : kSizes) {
            if (bytes > 4096 && p == 4)
                continue; // keep the suite fast
            for (bool in_place : {false, true}) {
                SCOPED_TRACE(testing::Message() << "ranks=" << p << " block=" << bytes
                                                << (in_place ? " in place" : ""));
                Bytes want;
                for (int r = 0; r < p; ++r) {
                    Bytes b = pattern(bytes, r);
                    want.insert(want.end(), b.begin(), b.end());
                }
                std::vector<Bytes> send, recv;
                for (int r = 0; r < p; ++r) {
                    send.push_back(pattern(bytes, r));
                    recv.push_back(Bytes(bytes * p, std::byte{0xee}));
                    if (in_place)
                        std::copy(send[r].begin(), send[r].end(), recv[r].begin() + r * bytes);
                }
                expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
                    const int r = comm.rank();
                    const void *sb = in_place ? recv[r].data() + r * bytes : send[r].data();
                    algo::allgather_ring(comm, sb, recv[r].data(), bytes);
                }));
                for (int r = 0; r < p; ++r)
                    EXPECT_TRUE(recv[r] == want) << "rank " << r;
            }
        }
    }
}

TEST(AlltoallPairwise, EveryRankCountAndSize)
{
    for (int p = 1; p <= 5; ++p) {
        for (size_t bytes : kSizes) {
            if (bytes > 4096 && p > 3)
                continue; // p * p MiB: keep the suite fast
            SCOPED_TRACE(testing::Message() << "ranks=" << p << " block=" << bytes);
            std::vector<Bytes> send, recv;
            for (int r = 0; r < p; ++r) {
                Bytes s;
                for (int j = 0; j < p; ++j) {
                    Bytes b = pattern(bytes, r, j); // block j of rank r, for rank j
                    s.insert(s.end(), b.begin(), b.end());
                }
                send.push_back(std::move(s));
                recv.push_back(Bytes(bytes * p, std::byte{0xee}));
            }
            expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
                const int r = comm.rank();
                algo::alltoall_pairwise(comm, send[r].data(), recv[r].data(), bytes);
            }));
            for (int r = 0; r < p; ++r)
                for (int i = 0; i < p; ++i)
                    EXPECT_TRUE(std::equal(recv[r].begin() + i * bytes,
                                           recv[r].begin() + (i + 1) * bytes,
                                           pattern(bytes, i, r).begin()))
                        << "rank " << r << " block from rank " << i;
        }
    }
}

class ReduceScatterTest
    : public testing::TestWithParam<std::tuple<dt_dtype_t, dt_reduce_op_t>> {};

TEST_P(ReduceScatterTest, MatchesReference)
{
    auto [dtype, op] = GetParam();
    const size_t es = esize(dtype);
    for (int p = 1; p <= 5; ++p) {
        for (size_t recvcount : {size_t{0}, size_t{1}, size_t{7}, size_t{1001},
                                 (size_t{1} << 18) / es + 1}) {
            SCOPED_TRACE(testing::Message() << dtype_op_name(dtype, op) << " ranks=" << p
                                            << " recvcount=" << recvcount);
            const size_t total = recvcount * p;
            std::vector<Bytes> inputs, outputs;
            for (int r = 0; r < p; ++r) {
                inputs.push_back(make_input(dtype, op, total, r, static_cast<uint32_t>(total)));
                outputs.push_back(Bytes(recvcount * es, std::byte{0x5a}));
            }
            const std::vector<Bytes> original = inputs;
            expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
                const int r = comm.rank();
                algo::reduce_scatter_ring(comm, inputs[r].data(), outputs[r].data(), recvcount,
                                          dtype, op);
            }));
            const Bytes want = reference_reduce(dtype, op, original, total);
            for (int r = 0; r < p; ++r) {
                EXPECT_EQ(compare(dtype, outputs[r].data(), want.data() + r * recvcount * es,
                                  recvcount),
                          "")
                    << "rank " << r;
                EXPECT_TRUE(inputs[r] == original[r]) << "rank " << r << ": sendbuf modified";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, ReduceScatterTest,
                         testing::Combine(testing::ValuesIn(kAllDtypes),
                                          testing::ValuesIn(kAllOps)),
                         [](const auto &info) {
                             return dtype_op_name(std::get<0>(info.param),
                                                  std::get<1>(info.param));
                         });

TEST(BarrierDissemination, NoRankLeavesBeforeAllEntered)
{
    for (int p = 1; p <= 5; ++p) {
        SCOPED_TRACE(testing::Message() << "ranks=" << p);
        constexpr int kRounds = 4;
        std::atomic<int> entered[kRounds] = {};
        std::atomic<int> early{0};
        expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
            for (int k = 0; k < kRounds; ++k) {
                // The last rank arrives late, so an early exit would be seen.
                if (comm.rank() == p - 1)
                    std::this_thread::sleep_for(std::chrono::milliseconds(5));
                entered[k].fetch_add(1);
                algo::barrier_dissemination(comm);
                if (entered[k].load() != p)
                    early.fetch_add(1);
            }
        }));
        EXPECT_EQ(early.load(), 0);
    }
}

} // namespace
} // namespace dt::test

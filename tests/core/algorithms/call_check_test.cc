// SPDX-License-Identifier: Apache-2.0
// Ordered mode's call check on the point-to-point path (Comm::set_check): checked calls
// give the same results as unchecked ones at every size around the inline limit, and a
// rank whose check differs is a DT_ERR_MISMATCH naming the field and both values, even
// for a rank that is blocked waiting for a message the disagreeing rank never sends.
#include "algorithms/algorithms.h"
#include "harness.h"
#include "runtime/call_check.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

namespace dt::test {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string &s, const std::string &part)
{
    return s.find(part) != std::string::npos;
}

CallCheck check_for(OpKind kind, size_t count, const char *name = "grad")
{
    OpDesc d;
    d.kind = kind;
    d.name = name;
    d.count = count;
    d.dtype = DT_FLOAT32;
    return call_check_of(d, 7);
}

// Elements on both sides of the inline limit and of the algorithms' switch points.
const size_t kCounts[] = {0, 1, 100, algo::kInlineCheckedBytes / 4 - 8,
                          algo::kInlineCheckedBytes / 4 + 1, 300000};

TEST(CallCheck, CheckedAllreducesGiveTheUncheckedResults)
{
    for (size_t count : kCounts) {
        for (int size : {2, 3, 4}) {
            std::vector<std::vector<float>> bufs(size);
            const CallCheck check = check_for(OpKind::allreduce, count);
            expect_all_ok(run_ranks(size, [&](algo::Comm &comm) {
                comm.set_check(&check, "grad");
                auto &b = bufs[comm.rank()];
                b.assign(count, static_cast<float>(comm.rank() + 1));
                algo::allreduce(comm, {b.data(), b.data(), count, DT_FLOAT32, DT_SUM});
            }));
            const float want = size * (size + 1) / 2.0f;
            for (const auto &b : bufs)
                for (float v : b)
                    ASSERT_EQ(v, want) << count << " elements, " << size << " ranks";
        }
    }
}

TEST(CallCheck, CheckedRingAndHalvingDoublingAgreeWithTheirResults)
{
    const size_t count = 50000;
    const CallCheck check = check_for(OpKind::allreduce, count);
    for (int algo_index : {0, 1}) {
        std::vector<std::vector<int32_t>> bufs(3);
        expect_all_ok(run_ranks(3, [&](algo::Comm &comm) {
            comm.set_check(&check, "grad");
            auto &b = bufs[comm.rank()];
            b.resize(count);
            std::iota(b.begin(), b.end(), comm.rank());
            algo::AllreduceArgs args{b.data(), b.data(), count, DT_INT32, DT_SUM};
            if (algo_index == 0)
                algo::allreduce_ring(comm, args);
            else
                algo::allreduce_halving_doubling(comm, args);
        }));
        for (const auto &b : bufs)
            for (size_t i = 0; i < count; i += 997)
                ASSERT_EQ(b[i], static_cast<int32_t>(3 * i + 3)) << i;
    }
}

TEST(CallCheck, CheckedBroadcastAllgatherAlltoallAndBarrier)
{
    for (size_t bytes : {size_t(4), size_t(20000), size_t(1) << 20}) {
        std::vector<std::vector<uint8_t>> bcast(3), gathered(3), exchanged(3);
        const CallCheck check = check_for(OpKind::broadcast, bytes);
        expect_all_ok(run_ranks(3, [&](algo::Comm &comm) {
            comm.set_check(&check, "x");
            const int r = comm.rank();
            bcast[r].assign(bytes, r == 1 ? 7 : 0);
            algo::broadcast(comm, bcast[r].data(), bytes, 1);
            std::vector<uint8_t> mine(bytes, static_cast<uint8_t>(r + 1));
            gathered[r].resize(3 * bytes);
            algo::allgather_ring(comm, mine.data(), gathered[r].data(), bytes);
            std::vector<uint8_t> out(3 * bytes);
            for (int j = 0; j < 3; ++j)
                std::fill_n(out.begin() + j * bytes, bytes, static_cast<uint8_t>(10 * r + j));
            exchanged[r].resize(3 * bytes);
            algo::alltoall_pairwise(comm, out.data(), exchanged[r].data(), bytes);
            algo::barrier_dissemination(comm);
        }));
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(bcast[r], std::vector<uint8_t>(bytes, 7));
            for (int j = 0; j < 3; ++j) {
                EXPECT_EQ(gathered[r][j * bytes], j + 1);
                EXPECT_EQ(gathered[r][j * bytes + bytes - 1], j + 1);
                EXPECT_EQ(exchanged[r][j * bytes], 10 * j + r);
            }
        }
    }
}

TEST(CallCheck, ACountThatDiffersIsAMismatchNamingBothValues)
{
    // Small (inline) and large (check as a message of its own) on either side.
    for (auto [mine, theirs] : {std::pair<size_t, size_t>{8, 4}, {8, 100000},
                                {100000, 8}, {300000, 100000}}) {
        std::vector<std::vector<float>> bufs(3);
        auto outcomes = run_ranks(
            3,
            [&](algo::Comm &comm) {
                const size_t count = comm.rank() == 1 ? theirs : mine;
                const CallCheck check = check_for(OpKind::allreduce, count);
                comm.set_check(&check, "grad");
                auto &b = bufs[comm.rank()];
                b.assign(count, 1.0f);
                algo::allreduce(comm, {b.data(), b.data(), count, DT_FLOAT32, DT_SUM});
            },
            {.timeout = 10s, .collective = "allreduce"});
        bool named = false;
        for (const auto &o : outcomes) {
            ASSERT_NE(o.status, DT_OK) << mine << " vs " << theirs;
            EXPECT_NE(o.status, DT_ERR_TIMEOUT) << o.message;
            if (o.status == DT_ERR_MISMATCH) {
                named = true;
                EXPECT_TRUE(contains(o.message, "allreduce 'grad'")) << o.message;
                EXPECT_TRUE(contains(o.message, "element count")) << o.message;
                EXPECT_TRUE(contains(o.message, "rank 1 " + std::to_string(theirs)))
                    << o.message;
                EXPECT_TRUE(contains(o.message, "DISTTRAIN_ORDERED")) << o.message;
            }
        }
        EXPECT_TRUE(named) << mine << " vs " << theirs;
    }
}

TEST(CallCheck, AMessageTooLargeForTheReceiveIsAMismatchWhenItsCheckArrivedFirst)
{
    // Rank 0 sends a call of 100000 elements (the check as a message of its own, then the
    // data) before rank 1, whose call has 50000, posts its receive. Its transport, like
    // tcp, refuses the oversized message in the irecv call: the check already there must
    // name the disagreement rather than the refusal.
    MemFabric fabric(2);
    fabric.complete_receives_at_post(1);
    std::atomic<bool> sent{false};
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            const size_t count = comm.rank() == 0 ? 100000 : 50000;
            const CallCheck check = check_for(OpKind::allreduce, count);
            comm.set_check(&check, "grad");
            std::vector<float> b(count, 1.0f);
            if (comm.rank() == 0) {
                comm.send(1, b.data(), count * sizeof(float));
                sent = true;
                return;
            }
            while (!sent)
                std::this_thread::sleep_for(1ms);
            comm.recv(0, b.data(), count * sizeof(float));
        },
        {.timeout = 10s, .fabric = &fabric, .collective = "allreduce"});
    EXPECT_EQ(outcomes[1].status, DT_ERR_MISMATCH) << outcomes[1].message;
    EXPECT_TRUE(contains(outcomes[1].message, "element count")) << outcomes[1].message;
    EXPECT_TRUE(contains(outcomes[1].message, "rank 0 100000")) << outcomes[1].message;
}

TEST(CallCheck, ANameThatDiffersIsAMismatch)
{
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            const CallCheck check =
                check_for(OpKind::allreduce, 4, comm.rank() == 0 ? "grad.a" : "grad.b");
            comm.set_check(&check, comm.rank() == 0 ? "grad.a" : "grad.b");
            float b[4] = {1, 1, 1, 1};
            algo::allreduce(comm, {b, b, 4, DT_FLOAT32, DT_SUM});
        },
        {.timeout = 10s, .collective = "allreduce"});
    for (const auto &o : outcomes) {
        EXPECT_EQ(o.status, DT_ERR_MISMATCH) << o.message;
        EXPECT_TRUE(contains(o.message, "another name")) << o.message;
    }
}

TEST(CallCheck, AnUncheckedPeerIsAMismatchNotData)
{
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            const CallCheck check = check_for(OpKind::allreduce, 64);
            if (comm.rank() == 0)
                comm.set_check(&check, "grad");
            std::vector<float> b(64, 1.0f);
            algo::allreduce(comm, {b.data(), b.data(), b.size(), DT_FLOAT32, DT_SUM});
        },
        {.timeout = 10s, .collective = "allreduce"});
    EXPECT_EQ(outcomes[0].status, DT_ERR_MISMATCH) << outcomes[0].message;
    EXPECT_TRUE(contains(outcomes[0].message, "call check")) << outcomes[0].message;
    EXPECT_NE(outcomes[1].status, DT_OK);
}

TEST(CallCheck, ARankBlockedOnAnotherPeerStillSeesADisagreeingCheck)
{
    // Rank 0 waits for rank 1, which never sends; rank 2's message, posted for later,
    // carries another call's check. Rank 0 must report that at once, not time out.
    auto start = algo::Clock::now();
    auto outcomes = run_ranks(
        3,
        [&](algo::Comm &comm) {
            const CallCheck mine = check_for(OpKind::allreduce, 4);
            const CallCheck other = check_for(OpKind::allgather, 4);
            comm.set_check(comm.rank() == 2 ? &other : &mine, "grad");
            float v[4] = {};
            if (comm.rank() == 0) {
                algo::Request later = comm.irecv(2, v, sizeof v);
                comm.recv(1, v, sizeof v);
                comm.wait(later);
            } else if (comm.rank() == 2) {
                comm.send(0, v, sizeof v);
            } else {
                comm.recv(0, v, sizeof v); // stays in the call until rank 0 gives up
            }
        },
        {.timeout = 20s, .collective = "allreduce"});
    EXPECT_EQ(outcomes[0].status, DT_ERR_MISMATCH) << outcomes[0].message;
    EXPECT_TRUE(contains(outcomes[0].message, "collective")) << outcomes[0].message;
    EXPECT_LT(algo::Clock::now() - start, 10s);
}

} // namespace
} // namespace dt::test

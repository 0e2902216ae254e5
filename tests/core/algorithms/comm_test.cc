// SPDX-License-Identifier: Apache-2.0
// Comm's waiting and error paths: failed peers, failed posts, failed progress, deadlines,
// short and oversized receives, cancellation. Every failure must name the collective and
// the peer, carry the right status, and leave no rank hanging.
#include "algorithms/algorithms.h"
#include "harness.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <thread>

namespace dt::test {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string &s, const std::string &part)
{
    return s.find(part) != std::string::npos;
}

TEST(Comm, SendRecvTestAndWaitOfNull)
{
    std::array<int, 4> got{};
    expect_all_ok(run_ranks(2, [&](algo::Comm &comm) {
        std::array<int, 4> data{1, 2, 3, 4};
        if (comm.rank() == 0) {
            comm.send(1, data.data(), sizeof(data));
        } else {
            algo::Request req = comm.irecv(0, got.data(), sizeof(got));
            while (!comm.test(req)) {
            }
            EXPECT_EQ(req, nullptr); // completed requests are released
            comm.wait(req);          // and waiting on them again is a no-op
        }
    }));
    EXPECT_EQ(got, (std::array<int, 4>{1, 2, 3, 4}));
}

TEST(Comm, PeerRequestFailingNamesThePeerAndCollective)
{
    MemFabric fabric(3);
    // Rank 0's receive from its left neighbour, rank 2, breaks on the way.
    fabric.fail_next_recv(0, 2, DTP_ERR_CONNECT);
    std::vector<std::vector<float>> bufs(3, std::vector<float>(1000, 1.0f));
    auto outcomes = run_ranks(
        3,
        [&](algo::Comm &comm) {
            auto &b = bufs[comm.rank()];
            algo::allreduce_ring(comm, {b.data(), b.data(), b.size(), DT_FLOAT32, DT_SUM});
        },
        {.timeout = 10s, .fabric = &fabric, .collective = "allreduce"});
    EXPECT_EQ(outcomes[0].status, DT_ERR_CONNECT);
    EXPECT_TRUE(contains(outcomes[0].message, "allreduce: receive from rank 2 failed"))
        << outcomes[0].message;
    EXPECT_TRUE(contains(outcomes[0].message, "DT_ERR_CONNECT")) << outcomes[0].message;
    // Rank 0 aborted its transport, so the others fail fast instead of timing out.
    for (int r : {1, 2})
        EXPECT_NE(outcomes[r].status, DT_ERR_TIMEOUT) << outcomes[r].message;
    // Rank 1 receives from rank 0 and sends to rank 2, and both abort: whichever it
    // notices first is the peer it names.
    EXPECT_EQ(outcomes[1].status, DT_ERR_PEER_LOST) << outcomes[1].message;
    EXPECT_TRUE(contains(outcomes[1].message, "receive from rank 0 failed") ||
                contains(outcomes[1].message, "send to rank 2 failed"))
        << outcomes[1].message;
}

TEST(Comm, FailedPostCarriesThePluginMessage)
{
    MemFabric fabric(2);
    fabric.fail_next_post(0, DTP_ERR_TRANSPORT, "mem: write to 10.0.0.2: broken pipe");
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            int v = 5;
            if (comm.rank() == 0)
                comm.send(1, &v, sizeof(v));
            else
                comm.recv(0, &v, sizeof(v));
        },
        {.timeout = 10s, .fabric = &fabric, .collective = "broadcast"});
    EXPECT_EQ(outcomes[0].status, DT_ERR_TRANSPORT);
    EXPECT_TRUE(contains(outcomes[0].message,
                         "broadcast: send to rank 1 failed: mem: write to 10.0.0.2: broken pipe"))
        << outcomes[0].message;
    EXPECT_EQ(outcomes[1].status, DT_ERR_PEER_LOST) << outcomes[1].message;
}

TEST(Comm, FailedProgressNamesTheTransport)
{
    MemFabric fabric(2);
    fabric.fail_next_progress(1, DTP_ERR_TRANSPORT, "mem: epoll_wait failed");
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            int v = 5;
            if (comm.rank() == 1)
                comm.recv(0, &v, sizeof(v));
        },
        {.timeout = 10s, .fabric = &fabric, .collective = "barrier"});
    EXPECT_EQ(outcomes[1].status, DT_ERR_TRANSPORT);
    EXPECT_TRUE(contains(outcomes[1].message, "barrier: transport 'mem' failed: "
                                              "mem: epoll_wait failed"))
        << outcomes[1].message;
}

TEST(Comm, DeadlineIsATimeoutNamingPeerAndVariable)
{
    // Rank 1 never joins the allreduce; rank 0 must give up at its deadline.
    std::vector<float> buf(100, 1.0f);
    auto start = algo::Clock::now();
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            if (comm.rank() == 0)
                algo::allreduce_halving_doubling(
                    comm, {buf.data(), buf.data(), buf.size(), DT_FLOAT32, DT_SUM});
        },
        {.timeout = 200ms, .collective = "allreduce"});
    auto elapsed = algo::Clock::now() - start;
    EXPECT_EQ(outcomes[0].status, DT_ERR_TIMEOUT);
    EXPECT_TRUE(contains(outcomes[0].message, "allreduce: timed out")) << outcomes[0].message;
    EXPECT_TRUE(contains(outcomes[0].message, "rank 1")) << outcomes[0].message;
    EXPECT_TRUE(contains(outcomes[0].message, "DISTTRAIN_TIMEOUT")) << outcomes[0].message;
    EXPECT_GE(elapsed, 200ms);
    EXPECT_LT(elapsed, 5s);
}

TEST(Comm, TimeoutWithManyRequestsInFlightIsClean)
{
    // Rank 2 stays away from a pipelined ring: ranks 0 and 1 have sends and receives
    // posted when they fail; the abort must leave nothing behind that crashes later.
    std::vector<std::vector<int32_t>> bufs(3, std::vector<int32_t>(10000, 1));
    auto outcomes = run_ranks(
        3,
        [&](algo::Comm &comm) {
            if (comm.rank() == 2)
                return;
            auto &b = bufs[comm.rank()];
            algo::allreduce_ring(comm, {b.data(), b.data(), b.size(), DT_INT32, DT_SUM},
                                 algo::RingOptions{256});
        },
        {.timeout = 300ms, .collective = "allreduce"});
    EXPECT_EQ(outcomes[0].status, DT_ERR_TIMEOUT) << outcomes[0].message;
    EXPECT_TRUE(outcomes[1].status == DT_ERR_TIMEOUT || outcomes[1].status == DT_ERR_PEER_LOST)
        << outcomes[1].message;
}

TEST(Comm, ShortReceiveIsAMismatch)
{
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            std::array<std::byte, 8> buf{};
            if (comm.rank() == 0)
                comm.send(1, buf.data(), 3);
            else
                comm.recv(0, buf.data(), 8);
        },
        {.timeout = 10s, .collective = "allgather"});
    EXPECT_EQ(outcomes[0].status, DT_OK) << outcomes[0].message;
    EXPECT_EQ(outcomes[1].status, DT_ERR_MISMATCH);
    EXPECT_TRUE(contains(outcomes[1].message,
                         "allgather: received 3 bytes from rank 0 but expected 8"))
        << outcomes[1].message;
}

TEST(Comm, OversizedMessageIsAProtocolErrorNamingThePeer)
{
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            std::array<std::byte, 16> buf{};
            if (comm.rank() == 0)
                comm.send(1, buf.data(), 16);
            else
                comm.recv(0, buf.data(), 8);
        },
        {.timeout = 10s, .collective = "alltoall"});
    EXPECT_EQ(outcomes[1].status, DT_ERR_PROTOCOL);
    EXPECT_TRUE(contains(outcomes[1].message, "alltoall: receive from rank 0 failed: rank 0: "
                                              "DT_ERR_PROTOCOL"))
        << outcomes[1].message;
}

TEST(Comm, CancelFlagAbortsAWait)
{
    std::atomic<bool> cancel{false};
    auto start = algo::Clock::now();
    std::thread canceller([&] {
        std::this_thread::sleep_for(50ms);
        cancel.store(true);
    });
    auto outcomes = run_ranks(
        2,
        [&](algo::Comm &comm) {
            comm.set_cancel(&cancel);
            int v = 0;
            if (comm.rank() == 1)
                comm.recv(0, &v, sizeof(v)); // rank 0 never sends
        },
        {.timeout = 10s, .collective = "barrier"});
    canceller.join();
    EXPECT_EQ(outcomes[1].status, DT_ERR_ABORTED) << outcomes[1].message;
    EXPECT_TRUE(contains(outcomes[1].message, "rank 0")) << outcomes[1].message;
    EXPECT_LT(algo::Clock::now() - start, 5s);
}

// A native collective of the transport (peer -1) that never completes, as MPI's does when
// a member has gone; the fabric's progress never touches it.
void wait_for_native(algo::Comm &comm)
{
    auto req = std::make_unique<algo::PendingTransfer>();
    req->raw.status = DTP_INPROGRESS;
    comm.wait(req);
}

// Rank 0 waits for a native collective while rank 2 has gone as `departure` says.
RankOutcome native_wait_after(const algo::Comm::Departure &departure,
                              std::chrono::milliseconds timeout)
{
    auto outcomes = run_ranks(
        3,
        [&](algo::Comm &comm) {
            comm.set_departure_check([&](int peer) {
                return peer == 2 ? departure : algo::Comm::Departure{};
            });
            if (comm.rank() == 0)
                wait_for_native(comm);
        },
        {.timeout = timeout, .collective = "allreduce"});
    return outcomes[0];
}

TEST(Comm, AMemberThatLeftEndsTheWaitForANativeCollective)
{
    // A native collective involves every member, so any member's notice ends it; the
    // deadline, long after, would make it a timeout.
    algo::Comm::Departure left;
    left.notice = "rank 2 aborted its context";
    RankOutcome o = native_wait_after(left, 10s);
    EXPECT_EQ(o.status, DT_ERR_PEER_LOST) << o.message;
    EXPECT_TRUE(contains(o.message, "allreduce: rank 2 left the job while this rank waited "
                                    "for the native allreduce of transport 'mem': rank 2 "
                                    "aborted its context"))
        << o.message;

    left.status = left.cause = DT_ERR_MISMATCH;
    left.notice = "allreduce 'x': rank 2 passes count 3, rank 0 count 4";
    o = native_wait_after(left, 10s);
    EXPECT_EQ(o.status, DT_ERR_MISMATCH) << o.message;
    EXPECT_TRUE(contains(o.message, "rank 2 found the ranks' calls disagree")) << o.message;
}

TEST(Comm, AMemberLostEndsTheWaitForANativeCollective)
{
    algo::Comm::Departure lost;
    lost.lost = true;
    lost.notice = "the connection to it failed (DT_ERR_PEER_LOST)";
    RankOutcome o = native_wait_after(lost, 10s);
    EXPECT_EQ(o.status, DT_ERR_PEER_LOST) << o.message;
    EXPECT_TRUE(contains(o.message, "allreduce: rank 2 was lost while this rank waited for "
                                    "the native allreduce"))
        << o.message;
}

TEST(Comm, AMemberThatLeftCleanlyLetsANativeCollectiveFinish)
{
    // It did its part before it left: the collective may still complete here, so only
    // the deadline ends a wait that it never completes.
    algo::Comm::Departure clean;
    clean.clean = true;
    clean.notice = "rank 2 has destroyed its context";
    RankOutcome o = native_wait_after(clean, 300ms);
    EXPECT_EQ(o.status, DT_ERR_TIMEOUT) << o.message;
}

} // namespace
} // namespace dt::test

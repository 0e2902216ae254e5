// SPDX-License-Identifier: Apache-2.0
// Moving data between ranks, what is particular to tcp (transfer_cases_test.cc has what
// every transport must do): small sends into a full socket, a large unexpected frame,
// self sends completing at once, a receive buffer that is too small (the connection
// closes), abort.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <thread>

using namespace tcptest;

// Small sends go out from a copy when the queue is empty (tcp_endpoint.cc,
// copy_and_send). 39 MB of them, more than the socket buffers hold while the receiver
// waits, so copies meet a full socket (partial writes, EAGAIN) and queue their rest: every
// frame still arrives intact and in order. A send that completed at once may reuse its
// buffer right away (it is scribbled over here); one still pending may not.
TEST(TcpTransfer, SmallSendsIntoAFullSocketArriveIntactAndInOrder) {
    constexpr int kMessages = 600;
    auto size_of = [](int i) { return size_t{65536} - (i % 3 == 0 ? 0 : i % 97); };
    run_ranks(2, [&](Instance &inst) {
        std::vector<std::vector<uint8_t>> bufs(kMessages);
        std::vector<dt_transport_request_t> reqs(kMessages);
        int completed_at_once = 0;
        if (inst.rank == 0) {
            for (int i = 0; i < kMessages; ++i) {
                bufs[i].resize(size_of(i));
                fill(bufs[i], static_cast<uint32_t>(i));
                ASSERT_GE(inst.isend(1, 4, bufs[i].data(), bufs[i].size(), &reqs[i]), 0);
                if (reqs[i].status == DTP_OK) {
                    ++completed_at_once;
                    std::fill(bufs[i].begin(), bufs[i].end(), uint8_t{0xee});
                }
            }
            // Some went at once, and some met the full socket (the receiver sleeps).
            EXPECT_GT(completed_at_once, 0);
            EXPECT_LT(completed_at_once, kMessages);
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            for (int i = 0; i < kMessages; ++i) {
                bufs[i].resize(size_of(i));
                ASSERT_GE(inst.irecv(0, 4, bufs[i].data(), bufs[i].size(), &reqs[i]), 0);
            }
        }
        for (int i = 0; i < kMessages; ++i) {
            ASSERT_EQ(inst.wait(&reqs[i]), DTP_OK) << inst.host.last_error();
            if (inst.rank == 1) {
                ASSERT_EQ(reqs[i].bytes, size_of(i)) << "message " << i;
                ASSERT_TRUE(check(bufs[i], size_of(i), static_cast<uint32_t>(i))) << i;
            }
        }
    });
}

TEST(TcpTransfer, LargeUnexpectedMessageDoesNotBlockEarlierTags) {
    // A 4 MiB frame nobody waits for yet holds back reading; a receive posted for it
    // later still gets it, and small frames sent before it were already delivered.
    auto store = std::make_shared<MemStore>();
    run_ranks(2, [&](Instance &inst) {
        std::vector<uint8_t> small(100), big(4 << 20);
        dt_transport_request_t s1{}, s2{};
        std::string v;
        if (inst.rank == 0) {
            fill(small, 1);
            fill(big, 2);
            ASSERT_GE(inst.isend(1, 1, small.data(), small.size(), &s1), 0);
            ASSERT_GE(inst.isend(1, 2, big.data(), big.size(), &s2), 0);
            store->set("sent", "1");
        } else {
            ASSERT_TRUE(store->get("sent", &v, 30000));
            inst.spin(50);
            ASSERT_GE(inst.irecv(0, 1, small.data(), small.size(), &s1), 0);
            EXPECT_EQ(s1.status, DTP_OK) << "buffered before the large frame";
            ASSERT_GE(inst.irecv(0, 2, big.data(), big.size(), &s2), 0);
        }
        EXPECT_EQ(inst.wait(&s1), DTP_OK);
        EXPECT_EQ(inst.wait(&s2), DTP_OK) << inst.host.last_error();
        if (inst.rank == 1) {
            EXPECT_TRUE(check(small, small.size(), 1));
            EXPECT_TRUE(check(big, big.size(), 2));
        }
    }, store);
}

class TcpTooSmall : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(TcpTooSmall, FailsTheReceiveWithProtocolError) {
    const size_t sent = std::get<0>(GetParam());
    const bool prepost = std::get<1>(GetParam());
    auto store = std::make_shared<MemStore>();
    run_ranks(2, [&](Instance &inst) {
        std::vector<uint8_t> buf(sent);
        dt_transport_request_t req{};
        std::string v;
        if (inst.rank == 0) {
            if (prepost) {
                ASSERT_TRUE(store->get("posted", &v, 30000));
            }
            // Rank 1 drops the frame and keeps the connection: the send completes, and
            // the frame after it still arrives.
            ASSERT_GE(inst.isend(1, 0xabc, buf.data(), sent, &req), 0);
            const uint8_t after[3] = {7, 8, 9};
            dt_transport_request_t next{};
            ASSERT_GE(inst.isend(1, 0xdef, after, sizeof after, &next), 0);
            store->set("sent", "1");
            EXPECT_EQ(inst.wait(&req, 10000), DTP_OK);
            EXPECT_EQ(inst.wait(&next, 10000), DTP_OK);
            ASSERT_TRUE(store->get("checked", &v, 30000));
        } else {
            if (prepost) {
                ASSERT_GE(inst.irecv(0, 0xabc, buf.data(), 1024, &req), 0);
                store->set("posted", "1");
            } else {
                ASSERT_TRUE(store->get("sent", &v, 30000));
                inst.spin(30);
                inst.irecv(0, 0xabc, buf.data(), 1024, &req);
            }
            EXPECT_EQ(inst.wait(&req), DTP_ERR_PROTOCOL);
            std::string e = inst.host.last_error();
            EXPECT_NE(e.find("rank 0 sent " + std::to_string(sent) + " bytes for tag 0xabc"),
                      std::string::npos) << e;
            EXPECT_NE(e.find("posted 1024 bytes"), std::string::npos) << e;
            EXPECT_NE(e.find("same count"), std::string::npos) << e;
            // Only that receive failed: the stream is in step, and the next frame
            // arrives whole (a rank that finds a disagreement still reaches its peers).
            uint8_t after[3] = {};
            dt_transport_request_t later{};
            ASSERT_GE(inst.irecv(0, 0xdef, after, sizeof after, &later), 0);
            EXPECT_EQ(inst.wait(&later, 10000), DTP_OK);
            EXPECT_EQ(later.bytes, sizeof after);
            EXPECT_EQ(after[0], 7);
            EXPECT_EQ(after[2], 9);
            store->set("checked", "1");
        }
    }, store);
}

INSTANTIATE_TEST_SUITE_P(All, TcpTooSmall,
                         ::testing::Combine(::testing::Values(size_t{4096}, size_t{1} << 20),
                                            ::testing::Bool()));

TEST(TcpTransfer, SendToSelf) {
    run_ranks(2, [](Instance &inst) {
        std::vector<uint8_t> a(5000), b(5000);
        fill(a, 9);
        dt_transport_request_t s{}, r{}, s0{}, r0{};
        // Send first, then receive; then receive first, then send (0 bytes).
        EXPECT_EQ(inst.isend(inst.rank, 4, a.data(), a.size(), &s), DTP_OK);
        EXPECT_EQ(s.status, DTP_OK);
        EXPECT_EQ(inst.irecv(inst.rank, 4, b.data(), b.size(), &r), DTP_OK);
        EXPECT_EQ(r.bytes, a.size());
        EXPECT_TRUE(check(b, b.size(), 9));
        EXPECT_EQ(inst.irecv(inst.rank, 5, nullptr, 0, &r0), DTP_INPROGRESS);
        EXPECT_EQ(inst.isend(inst.rank, 5, nullptr, 0, &s0), DTP_OK);
        EXPECT_EQ(r0.status, DTP_OK);
        EXPECT_EQ(r0.peer, inst.rank);
        dt_transport_request_t big{}, small{};
        EXPECT_EQ(inst.irecv(inst.rank, 6, b.data(), 10, &small), DTP_INPROGRESS);
        EXPECT_EQ(inst.isend(inst.rank, 6, a.data(), 100, &big), DTP_OK);
        EXPECT_EQ(small.status, DTP_ERR_PROTOCOL);
        EXPECT_NE(inst.host.last_error().find("posted 10 bytes"), std::string::npos);
    });
}

TEST(TcpTransfer, AbortFailsPendingAndLaterRequests) {
    run_ranks(2, [](Instance &inst) {
        if (inst.rank != 0) return;
        uint8_t b[16];
        dt_transport_request_t r{}, self{}, later{};
        ASSERT_EQ(inst.irecv(1, 3, b, sizeof(b), &r), DTP_INPROGRESS);
        ASSERT_EQ(inst.irecv(0, 3, b, sizeof(b), &self), DTP_INPROGRESS);
        ASSERT_EQ(plugin().ops->abort(inst.transport), DTP_OK);
        EXPECT_EQ(r.status, DTP_ERR_ABORTED);
        EXPECT_EQ(self.status, DTP_ERR_ABORTED);
        EXPECT_EQ(inst.isend(1, 3, b, sizeof(b), &later), DTP_ERR_ABORTED);
        EXPECT_EQ(later.status, DTP_ERR_ABORTED);
    });
}

// SPDX-License-Identifier: Apache-2.0
// What every point-to-point transport plugin must do, compiled into each plugin's test
// program (tcp_transport_test, ucx_transport_test), which loads its plugin through
// tcp_test_host: messages of every size, posted before or after they arrive; a shorter
// message than the receive; many tags and the core's tag classes from several ranks kept
// apart; same-tag messages in order; large messages both ways at once; a peer outside the
// job refused. Each plugin's own file adds what is particular to it.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace tcptest;

namespace {

// Rank 0 sends one message of `size` to rank 1. With prepost, rank 1 posts its receive
// before rank 0 sends; otherwise the message arrives unexpected and waits for it.
void exchange(size_t size, bool prepost) {
    auto store = std::make_shared<MemStore>();
    run_ranks(2, [&](Instance &inst) {
        std::vector<uint8_t> buf(size);
        dt_transport_request_t req{};
        std::string v;
        if (inst.rank == 0) {
            fill(buf, 3);
            if (prepost) {
                ASSERT_TRUE(store->get("posted", &v, 30000));
            }
            ASSERT_GE(inst.isend(1, 0x55, buf.data(), size, &req), 0);
            store->set("sent", "1");
            EXPECT_EQ(inst.wait(&req), DTP_OK);
            EXPECT_EQ(req.bytes, size);
        } else {
            if (prepost) {
                ASSERT_GE(inst.irecv(0, 0x55, buf.data(), size, &req), 0);
                store->set("posted", "1");
            } else {
                ASSERT_TRUE(store->get("sent", &v, 30000));
                inst.spin(30); // the frame arrives before any receive is posted
                ASSERT_GE(inst.irecv(0, 0x55, buf.data(), size, &req), 0);
            }
            EXPECT_EQ(inst.wait(&req), DTP_OK) << inst.host.last_error();
            EXPECT_EQ(req.bytes, size);
            EXPECT_EQ(req.peer, 0);
            EXPECT_TRUE(check(buf, size, 3));
        }
    }, store);
}

} // namespace

class TransferSizes : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(TransferSizes, MessageArrivesIntact) {
    exchange(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    All, TransferSizes,
    ::testing::Combine(::testing::Values(size_t{0}, size_t{1}, size_t{7}, size_t{4095},
                                         size_t{65536}, size_t{65537}, size_t{(1 << 20) + 13},
                                         size_t{64} << 20),
                       ::testing::Bool()),
    [](const auto &info) {
        return std::to_string(std::get<0>(info.param)) +
               (std::get<1>(info.param) ? "_posted" : "_unexpected");
    });

TEST(Transfer, SmallerMessageThanPostedReportsItsSize) {
    run_ranks(2, [](Instance &inst) {
        std::vector<uint8_t> buf(1000);
        dt_transport_request_t req{};
        if (inst.rank == 0) {
            fill(buf, 1);
            ASSERT_GE(inst.isend(1, 1, buf.data(), 10, &req), 0);
            EXPECT_EQ(inst.wait(&req), DTP_OK);
        } else {
            ASSERT_GE(inst.irecv(0, 1, buf.data(), buf.size(), &req), 0);
            EXPECT_EQ(inst.wait(&req), DTP_OK);
            EXPECT_EQ(req.bytes, 10u);
            EXPECT_EQ(req.peer, 0);
        }
    });
}

TEST(Transfer, ManyTagsMatchTheirOwnMessages) {
    constexpr int kTags = 300;
    auto size_of = [](int t) { return static_cast<size_t>((t * 977) % 3000); };
    run_ranks(2, [&](Instance &inst) {
        std::vector<std::vector<uint8_t>> bufs(kTags);
        std::vector<dt_transport_request_t> reqs(kTags);
        if (inst.rank == 0) {
            for (int t = 0; t < kTags; ++t) {
                bufs[t].resize(size_of(t));
                fill(bufs[t], static_cast<uint32_t>(t));
                ASSERT_GE(inst.isend(1, 1000 + t, bufs[t].data(), bufs[t].size(), &reqs[t]), 0);
            }
        } else {
            for (int t = kTags - 1; t >= 0; --t) { // reverse order: most arrive unexpected
                bufs[t].resize(3000);
                ASSERT_GE(inst.irecv(0, 1000 + t, bufs[t].data(), 3000, &reqs[t]), 0);
            }
        }
        for (int t = 0; t < kTags; ++t) {
            ASSERT_EQ(inst.wait(&reqs[t]), DTP_OK) << inst.host.last_error();
            if (inst.rank == 1) {
                EXPECT_EQ(reqs[t].bytes, size_of(t));
                EXPECT_TRUE(check(bufs[t], size_of(t), static_cast<uint32_t>(t))) << t;
            }
        }
    });
}

TEST(Transfer, CoreTagClassesAndSourcesDoNotMix) {
    // The engine's tags: operations 1<<40 + seq, negotiation 2<<40 + cycle, control 3<<40;
    // the same low bits in different classes, and from different ranks, stay apart.
    const uint64_t tags[] = {(uint64_t(1) << 40) + 7, (uint64_t(2) << 40) + 7,
                             uint64_t(3) << 40, 7, (uint64_t(77) << 40) + 7};
    run_ranks(3, [&](Instance &inst) {
        constexpr int kTags = 5;
        std::vector<uint32_t> out(kTags), in(kTags * 3, 0xffffffff);
        std::vector<dt_transport_request_t> sends(kTags * 3), recvs(kTags * 3);
        for (int peer = 0; peer < 3; ++peer) {
            for (int t = 0; t < kTags; ++t) {
                ASSERT_GE(inst.irecv(peer, tags[t], &in[peer * kTags + t], 4,
                                     &recvs[peer * kTags + t]), 0);
            }
        }
        for (int t = 0; t < kTags; ++t) out[t] = static_cast<uint32_t>(inst.rank * 100 + t);
        for (int peer = 0; peer < 3; ++peer) {
            for (int t = kTags - 1; t >= 0; --t) {
                ASSERT_GE(inst.isend(peer, tags[t], &out[t], 4, &sends[peer * kTags + t]), 0);
            }
        }
        for (auto &r : sends) EXPECT_EQ(inst.wait(&r), DTP_OK);
        for (int peer = 0; peer < 3; ++peer) {
            for (int t = 0; t < kTags; ++t) {
                EXPECT_EQ(inst.wait(&recvs[peer * kTags + t]), DTP_OK);
                EXPECT_EQ(in[peer * kTags + t], static_cast<uint32_t>(peer * 100 + t))
                    << "from rank " << peer << " tag " << tags[t];
            }
        }
    });
}

TEST(Transfer, SameTagMessagesArriveInOrder) {
    constexpr int kMessages = 200;
    auto size_of = [](int i) { return i % 10 == 0 ? size_t{100000} + i : size_t(i * 37 % 5000); };
    auto store = std::make_shared<MemStore>();
    run_ranks(2, [&](Instance &inst) {
        std::vector<std::vector<uint8_t>> bufs(kMessages);
        std::vector<dt_transport_request_t> reqs(kMessages);
        std::string v;
        if (inst.rank == 0) {
            for (int i = 0; i < kMessages; ++i) {
                bufs[i].resize(size_of(i));
                fill(bufs[i], static_cast<uint32_t>(i));
                ASSERT_GE(inst.isend(1, 9, bufs[i].data(), bufs[i].size(), &reqs[i]), 0);
            }
        } else {
            // Half posted early, half after the stream started: both paths keep order.
            for (int i = 0; i < kMessages; ++i) {
                if (i == kMessages / 2) inst.spin(20);
                bufs[i].resize(200000);
                ASSERT_GE(inst.irecv(0, 9, bufs[i].data(), bufs[i].size(), &reqs[i]), 0);
            }
        }
        for (int i = 0; i < kMessages; ++i) {
            ASSERT_EQ(inst.wait(&reqs[i]), DTP_OK) << inst.host.last_error();
            if (inst.rank == 1) {
                ASSERT_EQ(reqs[i].bytes, size_of(i)) << "message " << i;
                EXPECT_TRUE(check(bufs[i], size_of(i), static_cast<uint32_t>(i))) << i;
            }
        }
    }, store);
}

TEST(Transfer, LargeMessagesBothWaysAtOnce) {
    // Each rank sends before it receives: neither may wait for the other to read first.
    const size_t size = size_t{16} << 20;
    run_ranks(3, [&](Instance &inst) {
        int right = (inst.rank + 1) % 3, left = (inst.rank + 2) % 3;
        std::vector<uint8_t> out(size), in(size);
        fill(out, static_cast<uint32_t>(inst.rank));
        dt_transport_request_t s{}, r{};
        ASSERT_GE(inst.isend(right, 3, out.data(), size, &s), 0);
        inst.spin(10);
        ASSERT_GE(inst.irecv(left, 3, in.data(), size, &r), 0);
        EXPECT_EQ(inst.wait(&s), DTP_OK) << inst.host.last_error();
        EXPECT_EQ(inst.wait(&r), DTP_OK) << inst.host.last_error();
        EXPECT_TRUE(check(in, size, static_cast<uint32_t>(left)));
    });
}

TEST(Transfer, RejectsAPeerOutsideTheJob) {
    run_ranks(1, [](Instance &inst) {
        dt_transport_request_t r{};
        uint8_t b = 0;
        EXPECT_EQ(inst.isend(1, 0, &b, 1, &r), DTP_ERR_INVALID_ARGUMENT);
        EXPECT_NE(inst.host.last_error().find("peer 1"), std::string::npos);
        EXPECT_EQ(inst.irecv(-1, 0, &b, 1, &r), DTP_ERR_INVALID_ARGUMENT);
    });
}

// SPDX-License-Identifier: Apache-2.0
// The ucx transport plugin on its own: each rank is one plugin instance in a thread of this
// process (the tcp tests' fake host services: in-memory store, captured log), talking
// through UCX over whatever UCX picks on this machine (shared memory, tcp, self).
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <thread>

using namespace tcptest;

namespace {

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
                inst.spin(30); // the message arrives before any receive is posted
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

TEST(UcxNegotiate, AnswersVersion3WithNoNativeCollectives) {
    const Plugin &p = plugin();
    ASSERT_NE(p.ops, nullptr);
    EXPECT_STREQ(p.ops->name, "ucx");
    EXPECT_EQ(p.ops->abi_version, DT_TRANSPORT_VERSION_3);
    EXPECT_NE(p.ops->query, nullptr);
    EXPECT_EQ(p.ops->allreduce, nullptr);
    EXPECT_NE(p.ops->abort, nullptr);
}

TEST(UcxNegotiate, AnswersTheQueryHostOnlyWithControlTraffic) {
    Instance inst(std::make_shared<MemStore>(), "tok");
    ASSERT_EQ(inst.init(0, 1), DTP_OK) << inst.host.last_error();
    dt_transport_caps_t caps{};
    caps.struct_size = sizeof(caps);
    caps.abi_version = DT_TRANSPORT_VERSION;
    ASSERT_EQ(plugin().ops->query(inst.transport, &caps), DTP_OK);
    EXPECT_EQ(caps.p2p_memory, DT_TRANSPORT_MEMORY_HOST);
    EXPECT_EQ(caps.native_memory, DT_TRANSPORT_MEMORY_HOST);
    EXPECT_EQ(caps.flags, DT_TRANSPORT_CAP_CONTROL);
}

class UcxSizes : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(UcxSizes, MessageArrivesIntact) {
    exchange(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    All, UcxSizes,
    ::testing::Combine(::testing::Values(size_t{0}, size_t{1}, size_t{4095}, size_t{65537},
                                         size_t{(1 << 20) + 13}, size_t{16} << 20),
                       ::testing::Bool()),
    [](const auto &info) {
        return std::to_string(std::get<0>(info.param)) +
               (std::get<1>(info.param) ? "_posted" : "_unexpected");
    });

TEST(UcxTransfer, SmallerMessageThanPostedReportsItsSize) {
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

TEST(UcxTransfer, CoreTagClassesAndSourcesDoNotMix) {
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

TEST(UcxTransfer, SameTagMessagesArriveInOrder) {
    constexpr int kMessages = 200;
    auto size_of = [](int i) { return i % 10 == 0 ? size_t{100000} + i : size_t(i * 37 % 5000); };
    run_ranks(2, [&](Instance &inst) {
        std::vector<std::vector<uint8_t>> bufs(kMessages);
        std::vector<dt_transport_request_t> reqs(kMessages);
        if (inst.rank == 0) {
            for (int i = 0; i < kMessages; ++i) {
                bufs[i].resize(size_of(i));
                fill(bufs[i], static_cast<uint32_t>(i));
                ASSERT_GE(inst.isend(1, 9, bufs[i].data(), bufs[i].size(), &reqs[i]), 0);
            }
        } else {
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
    });
}

class UcxTooSmall : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(UcxTooSmall, FailsTheReceiveWithProtocolError) {
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
            ASSERT_GE(inst.isend(1, 0xabc, buf.data(), sent, &req), 0);
            store->set("sent", "1");
            inst.wait(&req, 5000); // either outcome: the receiver decides
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
            std::string logs = inst.host.logs() + inst.host.last_error();
            EXPECT_NE(logs.find("larger than the 1024-byte receive"), std::string::npos) << logs;
            store->set("checked", "1");
        }
    }, store);
}

INSTANTIATE_TEST_SUITE_P(All, UcxTooSmall,
                         ::testing::Combine(::testing::Values(size_t{4096}, size_t{1} << 20),
                                            ::testing::Bool()));

TEST(UcxTransfer, SendToSelf) {
    run_ranks(2, [](Instance &inst) {
        std::vector<uint8_t> a(5000), b(5000);
        fill(a, 9);
        dt_transport_request_t s{}, r{};
        ASSERT_GE(inst.isend(inst.rank, 4, a.data(), a.size(), &s), 0);
        ASSERT_GE(inst.irecv(inst.rank, 4, b.data(), b.size(), &r), 0);
        EXPECT_EQ(inst.wait(&s), DTP_OK);
        EXPECT_EQ(inst.wait(&r), DTP_OK);
        EXPECT_EQ(r.bytes, a.size());
        EXPECT_EQ(r.peer, inst.rank);
        EXPECT_TRUE(check(b, b.size(), 9));
    });
}

TEST(UcxTransfer, AbortFailsPendingRequestsAndLaterCalls) {
    run_ranks(2, [](Instance &inst) {
        std::vector<uint8_t> buf(100);
        dt_transport_request_t r{}, later{};
        ASSERT_EQ(inst.irecv(1 - inst.rank, 42, buf.data(), buf.size(), &r), DTP_INPROGRESS);
        ASSERT_EQ(plugin().ops->abort(inst.transport), DTP_OK);
        EXPECT_EQ(r.status, DTP_ERR_ABORTED);
        EXPECT_EQ(inst.isend(1 - inst.rank, 42, buf.data(), 1, &later), DTP_ERR_ABORTED);
        EXPECT_EQ(later.status, DTP_ERR_ABORTED);
    });
}

// SPDX-License-Identifier: Apache-2.0
// The ucx transport plugin on its own: each rank is one plugin instance in a thread of this
// process (the tcp tests' fake host services: in-memory store, captured log), talking
// through UCX over whatever UCX picks on this machine (shared memory, tcp, self). What
// every transport must do is in ../tcp/transfer_cases_test.cc; here: the negotiation,
// a receive buffer that is too small, self sends, abort.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <thread>

using namespace tcptest;

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

// SPDX-License-Identifier: Apache-2.0
// ucx transport failures: a peer that leaves fails the requests that involve it with
// DTP_ERR_PEER_LOST instead of hanging; init with no usable device or a missing peer
// fails with a message that says what to do.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace tcptest;

namespace {

void init_pair(Instance &r0, Instance &r1) {
    std::vector<int32_t> rcs(2, -1);
    std::thread t0([&] { rcs[0] = r0.init(0, 2); });
    rcs[1] = r1.init(1, 2);
    t0.join();
    ASSERT_EQ(rcs[0], DTP_OK) << r0.host.last_error();
    ASSERT_EQ(rcs[1], DTP_OK) << r1.host.last_error();
}

} // namespace

TEST(UcxFaults, PeerThatLeavesFailsPendingReceivesWithPeerLost) {
    // Over UCX's tcp transport a closed endpoint resets the connection, which the peer
    // sees at once; shared memory would rely on UCX's keepalive, which is slower.
    ScopedEnv tls("UCX_TLS", "tcp,self");
    ScopedEnv dev("UCX_NET_DEVICES", "lo");
    auto store = std::make_shared<MemStore>();
    Instance r0(store, "tok"), r1(store, "tok");
    init_pair(r0, r1);
    std::vector<uint8_t> in(1 << 20);
    dt_transport_request_t recv{};
    ASSERT_EQ(r1.irecv(0, 77, in.data(), in.size(), &recv), DTP_INPROGRESS);
    auto start = std::chrono::steady_clock::now();
    r0.finalize();
    EXPECT_EQ(r1.wait(&recv, 20000), DTP_ERR_PEER_LOST) << r1.host.logs();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_NE(r1.host.logs().find("lost rank 0"), std::string::npos) << r1.host.logs();
    dt_transport_request_t later{};
    EXPECT_EQ(r1.irecv(0, 78, in.data(), 1, &later), DTP_ERR_PEER_LOST);
    EXPECT_EQ(later.status, DTP_ERR_PEER_LOST);
}

TEST(UcxFaults, NoUsableDeviceIsAClearInitError) {
    ScopedEnv tls("UCX_TLS", "tcp");
    ScopedEnv dev("UCX_NET_DEVICES", "no_such_nic0");
    auto store = std::make_shared<MemStore>();
    Instance r0(store, "tok"), r1(store, "tok");
    std::vector<int32_t> rcs(2, -1);
    std::thread t0([&] { rcs[0] = r0.init(0, 2, 5000); });
    rcs[1] = r1.init(1, 2, 5000);
    t0.join();
    for (Instance *r : {&r0, &r1}) {
        int i = r == &r0 ? 0 : 1;
        EXPECT_LT(rcs[i], 0);
        std::string e = r->host.last_error();
        EXPECT_NE(e.find("UCX_NET_DEVICES=no_such_nic0"), std::string::npos) << e;
        EXPECT_NE(e.find("tcp"), std::string::npos) << e;
    }
}

TEST(UcxFaults, UnknownErrorHandlingValueIsRefused) {
    ScopedEnv err("DISTTRAIN_UCX_ERR_HANDLING", "sometimes");
    auto store = std::make_shared<MemStore>();
    Instance r0(store, "tok");
    EXPECT_EQ(r0.init(0, 1), DTP_ERR_INVALID_CONFIG);
    EXPECT_NE(r0.host.last_error().find("DISTTRAIN_UCX_ERR_HANDLING='sometimes'"),
              std::string::npos) << r0.host.last_error();
}

TEST(UcxFaults, MissingPeerTimesOutNamingIt) {
    auto store = std::make_shared<MemStore>();
    Instance r0(store, "tok");
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(r0.init(0, 2, 500), DTP_ERR_TIMEOUT);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    std::string e = r0.host.last_error();
    EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
}

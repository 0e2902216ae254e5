// SPDX-License-Identifier: Apache-2.0
// Socket tuning of data connections: the congestion control chosen for peers on this
// host (DISTTRAIN_TCP_CONGESTION), and that a tuning the kernel refuses never fails the
// job. The plugin reports its choice in its debug log, which is what these tests read.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

using namespace tcptest;

namespace {

// Runs two ranks that exchange one message each way; returns rank 0's log.
std::string exchange_and_log() {
    std::string log0;
    std::atomic<int> ok{0};
    run_ranks(2, [&](Instance &inst) {
        int peer = 1 - inst.rank;
        uint32_t out = 0xC0FFEE00u + static_cast<uint32_t>(inst.rank), in = 0;
        dt_transport_request_t s{}, r{};
        inst.irecv(peer, 7, &in, sizeof(in), &r);
        inst.isend(peer, 7, &out, sizeof(out), &s);
        if (inst.wait(&s, 20000) == DTP_OK && inst.wait(&r, 20000) == DTP_OK &&
            in == 0xC0FFEE00u + static_cast<uint32_t>(peer)) {
            ++ok;
        }
        if (inst.rank == 0) log0 = inst.host.logs();
    });
    EXPECT_EQ(ok.load(), 2) << "the exchange failed";
    return log0;
}

} // namespace

TEST(TcpTuning, LoopbackPeersUseReno) {
    std::string log = exchange_and_log();
    EXPECT_NE(log.find("congestion control reno towards rank 1"), std::string::npos) << log;
}

TEST(TcpTuning, SystemKeepsTheHostDefault) {
    ScopedEnv env("DISTTRAIN_TCP_CONGESTION", "system");
    std::string log = exchange_and_log();
    EXPECT_EQ(log.find("congestion control"), std::string::npos) << log;
}

TEST(TcpTuning, NamedAlgorithmIsUsedEverywhere) {
    ScopedEnv env("DISTTRAIN_TCP_CONGESTION", "reno"); // always built in and allowed
    std::string log = exchange_and_log();
    EXPECT_NE(log.find("congestion control reno towards rank 1"), std::string::npos) << log;
}

TEST(TcpTuning, UnavailableAlgorithmIsAWarningNotAFailure) {
    ScopedEnv env("DISTTRAIN_TCP_CONGESTION", "nosuchcc");
    std::string log = exchange_and_log();
    EXPECT_NE(log.find("[WARN] tcp: cannot use congestion control 'nosuchcc' towards rank 1"),
              std::string::npos)
        << log;
}

TEST(TcpTuning, RejectsAMalformedName) {
    ScopedEnv env("DISTTRAIN_TCP_CONGESTION", "Not A Name!");
    Instance inst(std::make_shared<MemStore>(), "tok");
    EXPECT_EQ(inst.init(0, 1), DTP_ERR_INVALID_CONFIG);
    std::string e = inst.host.last_error();
    EXPECT_NE(e.find("DISTTRAIN_TCP_CONGESTION='Not A Name!'"), std::string::npos) << e;
}

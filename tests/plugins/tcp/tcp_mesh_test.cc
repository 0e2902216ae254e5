// SPDX-License-Identifier: Apache-2.0
// Loading, negotiation, exported symbols, and building the mesh (including every way
// init can fail: a rank that never comes, a bad address, an impostor).
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <thread>

using namespace tcptest;

namespace {

dt_plugin_answer_t fresh_answer() {
    dt_plugin_answer_t a{};
    a.struct_size = sizeof(a);
    a.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    return a;
}

} // namespace

TEST(TcpNegotiate, AcceptsVersion3) {
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, 3, 1,
                            FakeHost::services()};
    dt_plugin_answer_t a = fresh_answer();
    ASSERT_EQ(plugin().negotiate(&offer, &a), DTP_OK);
    EXPECT_EQ(a.kind, DT_PLUGIN_KIND_TRANSPORT);
    EXPECT_EQ(a.ops_version, DT_TRANSPORT_VERSION_3);
    EXPECT_STREQ(a.name, "tcp");
    auto *ops = static_cast<const dt_transport_v3_t *>(a.ops);
    EXPECT_EQ(ops->abi_version, DT_TRANSPORT_VERSION_3);
    EXPECT_NE(ops->query, nullptr);
    EXPECT_NE(ops->abort, nullptr);
    EXPECT_EQ(ops->allreduce, nullptr); // no native collectives: the core's algorithms run
}

TEST(TcpNegotiate, DeclinesCoreWithoutVersion3) {
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, 2, 1,
                            FakeHost::services()};
    dt_plugin_answer_t a = fresh_answer();
    EXPECT_EQ(plugin().negotiate(&offer, &a), DTP_ERR_UNSUPPORTED);
    ASSERT_NE(a.decline_reason, nullptr);
    EXPECT_NE(std::string(a.decline_reason).find("version 3"), std::string::npos);
}

TEST(TcpNegotiate, AnswersTheQueryHostOnlyWithControlTraffic) {
    Instance inst(std::make_shared<MemStore>(), "tok");
    ASSERT_EQ(inst.init(0, 1), DTP_OK) << inst.host.last_error();
    dt_transport_caps_t caps{};
    caps.struct_size = sizeof(caps);
    caps.abi_version = DT_TRANSPORT_VERSION;
    ASSERT_EQ(plugin().ops->query(inst.transport, &caps), DTP_OK);
    EXPECT_EQ(caps.struct_size, sizeof(caps)); // the core's header is left alone
    EXPECT_EQ(caps.p2p_memory, DT_TRANSPORT_MEMORY_HOST);
    EXPECT_EQ(caps.native_memory, DT_TRANSPORT_MEMORY_HOST);
    EXPECT_EQ(caps.flags, DT_TRANSPORT_CAP_CONTROL);
    EXPECT_EQ(plugin().ops->query(nullptr, &caps), DTP_ERR_INVALID_ARGUMENT);
}

TEST(TcpPlugin, ExportsOnlyTheEntryPoint) {
    std::string cmd = std::string("nm -D --defined-only ") + plugin_path() + " 2>/dev/null";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::set<std::string> symbols;
    char line[512];
    while (fgets(line, sizeof(line), p) != nullptr) {
        char addr[64], type[8], name[400];
        if (sscanf(line, "%63s %7s %399s", addr, type, name) == 3) symbols.insert(name);
    }
    int rc = pclose(p);
    if (rc != 0 && symbols.empty()) GTEST_SKIP() << "nm is not available";
    EXPECT_EQ(symbols, std::set<std::string>{"dt_plugin_negotiate"});
}

class TcpMesh : public ::testing::TestWithParam<int> {};

TEST_P(TcpMesh, EveryPairExchangesAMessage) {
    const int n = GetParam();
    run_ranks(n, [n](Instance &inst) {
        std::vector<int32_t> out(static_cast<size_t>(n)), in(static_cast<size_t>(n), -1);
        std::vector<dt_transport_request_t> sends(static_cast<size_t>(n)),
            recvs(static_cast<size_t>(n));
        for (int p = 0; p < n; ++p) { // self included: it must work too
            out[static_cast<size_t>(p)] = inst.rank * 100 + p;
            ASSERT_GE(inst.irecv(p, 7, &in[static_cast<size_t>(p)], sizeof(int32_t),
                                 &recvs[static_cast<size_t>(p)]), 0);
            ASSERT_GE(inst.isend(p, 7, &out[static_cast<size_t>(p)], sizeof(int32_t),
                                 &sends[static_cast<size_t>(p)]), 0);
        }
        for (int p = 0; p < n; ++p) {
            EXPECT_EQ(inst.wait(&sends[static_cast<size_t>(p)]), DTP_OK);
            EXPECT_EQ(inst.wait(&recvs[static_cast<size_t>(p)]), DTP_OK);
            EXPECT_EQ(recvs[static_cast<size_t>(p)].peer, p);
            EXPECT_EQ(recvs[static_cast<size_t>(p)].bytes, sizeof(int32_t));
            EXPECT_EQ(in[static_cast<size_t>(p)], p * 100 + inst.rank);
        }
    });
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpMesh, ::testing::Values(1, 2, 3, 4));

TEST(TcpInit, TimesOutNamingTheMissingRank) {
    auto store = std::make_shared<MemStore>();
    std::vector<std::string> errors(2);
    std::vector<int32_t> rcs(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) { // rank 2 of 3 never starts
        threads.emplace_back([&, r] {
            Instance inst(store, "tok");
            rcs[static_cast<size_t>(r)] = inst.init(r, 3, 700);
            errors[static_cast<size_t>(r)] = inst.host.last_error();
        });
    }
    for (auto &t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(rcs[static_cast<size_t>(r)], DTP_ERR_TIMEOUT);
        EXPECT_NE(errors[static_cast<size_t>(r)].find("rank 2"), std::string::npos)
            << errors[static_cast<size_t>(r)];
        EXPECT_EQ(errors[static_cast<size_t>(r)].find("rank " + std::to_string(1 - r) + " "),
                  std::string::npos)
            << "the rank that did connect is not missing: " << errors[static_cast<size_t>(r)];
    }
}

// The store goes away while init waits for a peer's address (the rank serving it failed):
// init fails with the store's status and names the peers still missing, which the host's
// reason cannot know; it is not the job giving up on the transport.
TEST(TcpInit, AStoreThatGoesAwayNamesThePeersStillMissing) {
    struct GoneStore : MemStore {
        bool get(const std::string &, std::string *, int) override {
            throw StoreGone("the store closed");
        }
    };
    Instance inst(std::make_shared<GoneStore>(), "tok");
    EXPECT_EQ(inst.init(1, 2, 30000), DTP_ERR_STORE);
    const std::string err = inst.host.last_error();
    EXPECT_NE(err.find("tcp: rank 1 "), std::string::npos) << err;
    EXPECT_NE(err.find("still missing: rank 0 (no address in the store"), std::string::npos)
        << err;
    EXPECT_EQ(err.find("gave up"), std::string::npos) << err;
}

TEST(TcpInit, RejectsAnAddressThatIsNotAnIp) {
    ScopedEnv env("DISTTRAIN_TCP_ADDR", "not-an-ip");
    Instance inst(std::make_shared<MemStore>(), "tok");
    EXPECT_EQ(inst.init(0, 2, 1000), DTP_ERR_INVALID_CONFIG);
    std::string e = inst.host.last_error();
    EXPECT_NE(e.find("DISTTRAIN_TCP_ADDR='not-an-ip'"), std::string::npos) << e;
    EXPECT_NE(e.find("lo 127.0.0.1"), std::string::npos) << "lists interfaces: " << e;
}

TEST(TcpInit, RejectsAnAddressOfAnotherHost) {
    ScopedEnv env("DISTTRAIN_TCP_ADDR", "203.0.113.7"); // TEST-NET-3, never local
    Instance inst(std::make_shared<MemStore>(), "tok");
    EXPECT_EQ(inst.init(0, 2, 1000), DTP_ERR_INVALID_CONFIG);
    EXPECT_NE(inst.host.last_error().find("cannot listen on 203.0.113.7"), std::string::npos)
        << inst.host.last_error();
}

TEST(TcpInit, RejectsAnUnknownInterface) {
    ScopedEnv env("DISTTRAIN_TCP_IFNAME", "nosuchif0");
    Instance inst(std::make_shared<MemStore>(), "tok");
    EXPECT_EQ(inst.init(0, 1), DTP_ERR_INVALID_CONFIG);
    std::string e = inst.host.last_error();
    EXPECT_NE(e.find("nosuchif0"), std::string::npos) << e;
    EXPECT_NE(e.find("lo 127.0.0.1"), std::string::npos) << e;
}

TEST(TcpInit, RejectsAMalformedNumber) {
    ScopedEnv env("DISTTRAIN_TCP_MAX_MESSAGE", "12abc");
    Instance inst(std::make_shared<MemStore>(), "tok");
    EXPECT_EQ(inst.init(0, 1), DTP_ERR_INVALID_CONFIG);
    EXPECT_NE(inst.host.last_error().find("DISTTRAIN_TCP_MAX_MESSAGE"), std::string::npos);
}

TEST(TcpInit, RejectsANumberWithBlanksOrASign) {
    // Digits only, as the core reads its own variables: strtoull took these.
    for (const char *value : {" 65536", "+65536", "65536 ", "-1"}) {
        ScopedEnv env("DISTTRAIN_TCP_SOCKBUF", value);
        Instance inst(std::make_shared<MemStore>(), "tok");
        EXPECT_EQ(inst.init(0, 1), DTP_ERR_INVALID_CONFIG) << "'" << value << "'";
        std::string e = inst.host.last_error();
        EXPECT_NE(e.find(std::string("DISTTRAIN_TCP_SOCKBUF='") + value + "' is not a whole "
                         "number in [0, 1073741824] written in decimal digits"),
                  std::string::npos) << e;
    }
}

TEST(TcpInit, ListensOnTheNamedInterface) {
    ScopedEnv env("DISTTRAIN_TCP_IFNAME", "lo");
    auto store = std::make_shared<MemStore>();
    run_ranks(2, [](Instance &) {}, store);
    std::string addr;
    ASSERT_TRUE(store->get("addr/0", &addr, 0));
    EXPECT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
}

TEST(TcpInit, ImpostorWithWrongTokenIsRefusedAndTheJobStillStarts) {
    auto store = std::make_shared<MemStore>();
    Instance rank0(store, "right-token");
    int32_t rc0 = -1;
    std::thread t0([&] { rc0 = rank0.init(0, 2, 20000); });

    // The impostor reads the real store but publishes into its own, and claims rank 1.
    Instance impostor(store, "wrong-token");
    impostor.host.write_store = std::make_shared<MemStore>();
    int32_t rc_bad = impostor.init(1, 2, 1000);
    EXPECT_NE(rc_bad, DTP_OK);
    EXPECT_NE(impostor.host.last_error().find("rank 0"), std::string::npos)
        << impostor.host.last_error();

    Instance rank1(store, "right-token");
    int32_t rc1 = rank1.init(1, 2, 20000);
    t0.join();
    EXPECT_EQ(rc0, DTP_OK) << rank0.host.last_error();
    EXPECT_EQ(rc1, DTP_OK) << rank1.host.last_error();
    std::string log = rank0.host.logs();
    EXPECT_NE(log.find("[WARN] tcp: refused connection from 127.0.0.1:"), std::string::npos)
        << log;
    EXPECT_NE(log.find("does not hold this job's token"), std::string::npos) << log;

    // And the real pair works.
    uint8_t out = 42, in = 0;
    dt_transport_request_t s{}, r{};
    ASSERT_GE(rank1.irecv(0, 1, &in, 1, &r), 0);
    ASSERT_GE(rank0.isend(1, 1, &out, 1, &s), 0);
    EXPECT_EQ(rank1.wait(&r), DTP_OK);
    EXPECT_EQ(rank0.wait(&s), DTP_OK);
    EXPECT_EQ(in, 42);
}

// SPDX-License-Identifier: Apache-2.0
// The store against bad peers: wrong tokens, silent listeners, garbage and oversized
// frames. Nothing here may crash, hang or stop the server from serving well-behaved
// clients.
#include "bootstrap/store.h"
#include "bootstrap/store_handshake.h"
#include "bootstrap/store_protocol.h"

#include "bootstrap_test_util.h"

#include <cstring>
#include <future>
#include <thread>

namespace dt::bootstrap {
namespace {

using namespace std::chrono_literals;
using test::error_of;

const std::string kToken = "right-token";

struct Robustness : ::testing::Test {
    StoreServer server{"127.0.0.1:0", Auth(kToken)};
    uint16_t port() const { return test::port_of(server.address()); }

    // The server still answers a well-behaved client.
    void expect_still_serving()
    {
        StoreClient c(server.address(), Auth(kToken), 5000ms);
        c.set("alive", "yes");
        EXPECT_EQ(c.get("alive", 1000ms), "yes");
    }

    // A raw connection past the token challenge, for sending hand-made frames.
    Fd authenticated_raw()
    {
        Fd s = test::connect_raw(port());
        HandshakeResult hs = client_handshake(s.get(), Auth(kToken), Deadline::after(5000ms));
        EXPECT_EQ(hs.outcome, Handshake::ok);
        return s;
    }

    static void send(int fd, const std::string &bytes)
    {
        IoResult r = write_full(fd, bytes.data(), bytes.size(), Deadline::after(5000ms));
        EXPECT_TRUE(r.ok()) << r.describe();
    }
};

TEST_F(Robustness, WrongTokenIsRefusedAndCounted)
{
    EXPECT_EQ(server.refused_connections(), 0u);
    std::string msg = error_of(
        [&] { StoreClient c(server.address(), Auth("wrong-token"), 5000ms); }, DT_ERR_AUTH);
    EXPECT_NE(msg.find(server.address()), std::string::npos) << msg;
    EXPECT_NE(msg.find("DISTTRAIN_JOB_TOKEN"), std::string::npos) << msg;
    EXPECT_EQ(server.refused_connections(), 1u);
    // Counted as a token refusal too, with where it came from, for rank 0's messages.
    StoreServer::TokenRefusals refused = server.token_refusals();
    EXPECT_EQ(refused.count, 1u);
    EXPECT_EQ(refused.last_peer.rfind("127.0.0.1:", 0), 0u) << refused.last_peer;
    expect_still_serving();
    EXPECT_EQ(server.refused_connections(), 1u);
}

TEST_F(Robustness, GarbageBeforeTheChallengeIsRefused)
{
    Fd s = test::connect_raw(port());
    send(s.get(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(200, '\xff'));
    EXPECT_TRUE(test::closed_by_peer(s.get()));
    EXPECT_TRUE(test::eventually([&] { return server.refused_connections() == 1; }));
    EXPECT_EQ(server.token_refusals().count, 0u); // it proved no token at all
    expect_still_serving();
}

TEST_F(Robustness, GarbageFramesAfterTheChallengeCloseOnlyThatConnection)
{
    StoreClient good(server.address(), Auth(kToken), 5000ms);
    const std::string frames[] = {
        std::string("\x00\x00\x00\x01\x63", 5),                          // unknown op
        std::string("\x00\x00\x00\x05\x01\xff\xff\xff\xff", 9),          // key longer than frame
        std::string("\x00\x00\x00\x03\x02\x00\x00", 7),                  // truncated get
        std::string("\x00\x00\x00\x0a\x04\xff\xff\xff\xff\x00\x00\x00\x00\x00", 14), // huge wait
    };
    for (const std::string &frame : frames) {
        Fd s = authenticated_raw();
        send(s.get(), frame);
        EXPECT_TRUE(test::closed_by_peer(s.get()));
        good.set("k", "v"); // the other connection is untouched
        EXPECT_EQ(good.get("k", 100ms), "v");
    }
    EXPECT_EQ(server.refused_connections(), 0u); // these were authenticated
}

TEST_F(Robustness, OversizedAndZeroLengthPrefixesAreRejected)
{
    const std::string prefixes[] = {
        std::string("\xff\xff\xff\xff", 4),
        std::string("\x00\x00\x00\x00", 4),
        [] {
            uint32_t n = proto::kMaxFrameBytes + 1;
            return std::string{char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
        }(),
    };
    for (const std::string &prefix : prefixes) {
        Fd s = authenticated_raw();
        send(s.get(), prefix);
        // Closed at once, without waiting for (or allocating) the announced body.
        EXPECT_TRUE(test::closed_by_peer(s.get(), 2000ms));
    }
    expect_still_serving();
}

TEST_F(Robustness, SilentAndHalfOpenConnectionsDoNotBlockOthers)
{
    Fd silent = test::connect_raw(port());          // never answers the challenge
    Fd partial = authenticated_raw();               // starts a frame and stalls
    send(partial.get(), std::string("\x00\x00\x01\x00\x01", 5));
    Fd gone = test::connect_raw(port());
    gone.reset();                                   // hangs up at once
    expect_still_serving();
    EXPECT_EQ(server.refused_connections(), 0u);
}

TEST_F(Robustness, ClientHangingUpDuringABlockingGetIsHarmless)
{
    {
        Fd s = authenticated_raw();
        proto::Request req;
        req.op = proto::Op::get;
        req.key = "never";
        req.timeout_ms = proto::kNoTimeout;
        send(s.get(), proto::encode_request(req));
        std::this_thread::sleep_for(50ms);
    } // closed while the server waits for "never"
    expect_still_serving();
}

TEST(StoreClientTimeout, ListenerThatNeverAnswersTimesOut)
{
    uint16_t port = 0;
    Fd listener = test::listen_raw(port);
    std::string addr = "127.0.0.1:" + std::to_string(port);
    auto start = std::chrono::steady_clock::now();
    std::string msg = error_of([&] { StoreClient c(addr, Auth(kToken), 300ms); }, DT_ERR_TIMEOUT);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_NE(msg.find("no rendezvous store answered at " + addr + " within 300 ms"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("DISTTRAIN_STORE_ADDR"), std::string::npos) << msg;
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 3s);
}

TEST(StoreClientTimeout, NothingListeningTimesOut)
{
    std::string addr = "127.0.0.1:" + std::to_string(test::free_port());
    auto start = std::chrono::steady_clock::now();
    std::string msg = error_of([&] { StoreClient c(addr, Auth(kToken), 300ms); }, DT_ERR_TIMEOUT);
    EXPECT_NE(msg.find(addr), std::string::npos) << msg;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(StoreClientTimeout, BadAddressesAreConnectErrors)
{
    error_of([] { StoreClient c("no-port", Auth(kToken), 100ms); }, DT_ERR_CONNECT);
    error_of([] { StoreClient c("host.invalid:1", Auth(kToken), 100ms); }, DT_ERR_CONNECT);
}

// The store's server exits (the rank 0 that served it failed): the call that meets the
// closed connection and every later one fail at once, saying so. A reconnect that took
// the store for one not started yet would wait out the client's timeout on each call.
TEST(StoreClientLoss, AClosedStoreFailsEveryCallAtOnceNamingWhoServedIt)
{
    auto server = std::make_unique<StoreServer>("127.0.0.1:0", Auth(kToken));
    const std::string addr = server->address();
    StoreClient c(addr, Auth(kToken), 3000ms, "DISTTRAIN_STORE_ADDR", "rank 0");
    c.set("k", "v");
    server.reset();
    for (int call = 0; call < 3; ++call) {
        std::string msg = error_of([&] { c.get("k", 0ms); }, DT_ERR_STORE);
        EXPECT_NE(msg.find("the rendezvous store at " + addr + " (served by rank 0) closed"),
                  std::string::npos)
            << "call " << call << ": " << msg;
        EXPECT_NE(msg.find("rank 0 has probably failed or exited"), std::string::npos) << msg;
        EXPECT_EQ(c.lost(), std::optional<std::string>(msg));
    }
}

// What a polling caller relies on: an absent key is no failure of the store.
TEST(StoreClientLoss, AnAbsentKeyIsNotALostStore)
{
    StoreServer server("127.0.0.1:0", Auth(kToken));
    StoreClient c(server.address(), Auth(kToken), 3000ms);
    EXPECT_EQ(c.try_get("absent", 0ms), std::nullopt);
    EXPECT_EQ(c.lost(), std::nullopt);
    c.set("present", "v");
    EXPECT_EQ(c.try_get("present", 0ms), std::optional<std::string>("v"));
}

// A fake store that completes the challenge with a proof of a different token.
TEST(StoreClientAuth, ServerWithADifferentTokenIsRejected)
{
    uint16_t port = 0;
    Fd listener = test::listen_raw(port);
    auto fake = std::async(std::launch::async, [&] {
        Fd conn(::accept(listener.get(), nullptr, nullptr));
        Deadline deadline = Deadline::after(5000ms);
        Nonce a = Auth::random_nonce();
        std::string hello = "DTSTORE1" + std::string(a.begin(), a.end());
        write_full(conn.get(), hello.data(), hello.size(), deadline);
        char answer[8 + 32 + 32];
        read_full(conn.get(), answer, sizeof answer, deadline);
        Nonce c{};
        std::memcpy(c.data(), answer + 8, c.size());
        Mac proof = Auth("impostor").server_proof("store", a, c);
        std::string verdict = "A" + std::string(proof.begin(), proof.end());
        write_full(conn.get(), verdict.data(), verdict.size(), deadline);
        test::closed_by_peer(conn.get());
    });
    std::string addr = "127.0.0.1:" + std::to_string(port);
    error_of([&] { StoreClient c(addr, Auth(kToken), 5000ms); }, DT_ERR_AUTH);
    fake.get();
}

// A process on the port that speaks some other protocol.
TEST(StoreClientAuth, NonStorePeerIsAProtocolError)
{
    uint16_t port = 0;
    Fd listener = test::listen_raw(port);
    auto fake = std::async(std::launch::async, [&] {
        Fd conn(::accept(listener.get(), nullptr, nullptr));
        std::string banner = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n";
        write_full(conn.get(), banner.data(), banner.size(), Deadline::after(5000ms));
        test::closed_by_peer(conn.get());
    });
    std::string addr = "127.0.0.1:" + std::to_string(port);
    std::string msg = error_of([&] { StoreClient c(addr, Auth(kToken), 5000ms); }, DT_ERR_PROTOCOL);
    EXPECT_NE(msg.find(addr), std::string::npos) << msg;
    fake.get();
}

} // namespace
} // namespace dt::bootstrap

// SPDX-License-Identifier: Apache-2.0
// Faults: a peer that sends garbage after a valid handshake, connections that never
// authenticate, a peer that dies mid-transfer. None may crash, hang or disturb the job.
#include "tcp_test_host.h"

#include "tcp_frame.h"
#include "tcp_handshake.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

using namespace tcptest;

namespace {

// A raw TCP connection from the test to a rank's published "127.0.0.1:port".
class RawSocket {
public:
    explicit RawSocket(const std::string &addr) {
        auto colon = addr.rfind(':');
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(colon + 1))));
        inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr);
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
            close(fd_);
            fd_ = -1;
        }
    }
    ~RawSocket() {
        if (fd_ >= 0) close(fd_);
    }
    bool ok() const { return fd_ >= 0; }
    bool send_all(const void *p, size_t n) {
        return ::send(fd_, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
    }
    // Reads exactly n bytes within timeout_ms; false on EOF, error or timeout.
    bool recv_all(void *p, size_t n, int timeout_ms = 5000) {
        auto *b = static_cast<uint8_t *>(p);
        size_t got = 0;
        while (got < n) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, timeout_ms) <= 0) return false;
            ssize_t r = ::recv(fd_, b + got, n - got, 0);
            if (r <= 0) return false;
            got += static_cast<size_t>(r);
        }
        return true;
    }
    // True when the other side closed the connection within timeout_ms.
    bool closed_by_peer(int timeout_ms) {
        uint8_t b[256];
        pollfd pfd{fd_, POLLIN, 0};
        while (poll(&pfd, 1, timeout_ms) > 0) {
            ssize_t r = ::recv(fd_, b, sizeof(b), 0);
            if (r <= 0) return true;
        }
        return false;
    }

    // Closes with a reset (SO_LINGER 0), as a process that exits with bytes unread does.
    void reset() {
        linger l{1, 0};
        setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(fd_);
        fd_ = -1;
    }

    // Plays the connector side of the handshake as `rank` to `peer`, written from the
    // protocol description rather than the plugin's code.
    bool handshake(const std::string &token, int32_t rank, int32_t peer) {
        dt::tcp::HandshakeHello hello{};
        if (!recv_all(&hello, sizeof(hello))) return false;
        if (std::memcmp(hello.magic, dt::tcp::kHandshakeMagic, 8) != 0 || hello.rank != peer) {
            return false;
        }
        dt::tcp::HandshakeAnswer answer{};
        std::memcpy(answer.magic, dt::tcp::kHandshakeMagic, 8);
        answer.rank = rank;
        answer.peer_rank = peer;
        RAND_bytes(answer.nonce, 32);
        auto input = [&](const char *label) {
            std::vector<uint8_t> in(88);
            std::memcpy(in.data(), label, 16);
            std::memcpy(in.data() + 16, hello.nonce, 32);
            std::memcpy(in.data() + 48, answer.nonce, 32);
            for (int i = 0; i < 4; ++i) {
                in[80 + i] = static_cast<uint8_t>(uint32_t(rank) >> (8 * i));
                in[84 + i] = static_cast<uint8_t>(uint32_t(peer) >> (8 * i));
            }
            return in;
        };
        auto in_c = input("dt-tcp-connector");
        auto mac = hmac(token, in_c.data(), in_c.size());
        std::memcpy(answer.mac, mac.data(), 32);
        if (!send_all(&answer, sizeof(answer))) return false;
        dt::tcp::HandshakeProof proof{};
        if (!recv_all(&proof, sizeof(proof))) return false;
        const char acceptor_label[16] = {'d', 't', '-', 't', 'c', 'p', '-', 'a',
                                         'c', 'c', 'e', 'p', 't', 'o', 'r', '\0'};
        auto in_a = input(acceptor_label);
        return hmac(token, in_a.data(), in_a.size()) ==
               std::vector<uint8_t>(proof.mac, proof.mac + 32);
    }

private:
    int fd_ = -1;
};

// Rank 0 is a real instance of a 2-rank job; the test plays rank 1 over a raw socket
// that has passed the handshake.
struct RawRank1 {
    std::shared_ptr<MemStore> store = std::make_shared<MemStore>();
    Instance rank0{store, "tok"};
    std::unique_ptr<RawSocket> peer;

    // False (with a gtest failure) when the pair could not be set up.
    bool start() {
        int32_t rc0 = -1;
        std::thread t([&] { rc0 = rank0.init(0, 2, 20000); });
        std::string addr;
        bool ok = store->get("addr/0", &addr, 20000);
        if (ok) {
            peer = std::make_unique<RawSocket>(addr);
            ok = peer->ok() && peer->handshake("tok", 1, 0);
        }
        t.join();
        EXPECT_TRUE(ok) << "the test's own handshake failed";
        EXPECT_EQ(rc0, DTP_OK) << rank0.host.last_error();
        return ok && rc0 == DTP_OK;
    }
};

// The raw rank 1 sends `header` while rank 0 waits for two messages.
void garbage_frame(const dt::tcp::FrameHeader &header, const std::string &expect) {
    RawRank1 pair;
    ASSERT_TRUE(pair.start());
    Instance &rank0 = pair.rank0;
    RawSocket &peer = *pair.peer;

    std::vector<uint8_t> buf(4096);
    dt_transport_request_t r1{}, r2{};
    ASSERT_EQ(rank0.irecv(1, 5, buf.data(), buf.size(), &r1), DTP_INPROGRESS);
    ASSERT_EQ(rank0.irecv(1, 6, buf.data(), buf.size(), &r2), DTP_INPROGRESS);
    ASSERT_TRUE(peer.send_all(&header, sizeof(header)));
    ASSERT_TRUE(peer.send_all("junk after the header", 21));
    EXPECT_EQ(rank0.wait(&r1, 10000), DTP_ERR_PROTOCOL);
    EXPECT_EQ(r2.status, DTP_ERR_PROTOCOL) << "every pending request with the peer fails";
    std::string e = rank0.host.last_error();
    EXPECT_NE(e.find("rank 1 ("), std::string::npos) << e;
    EXPECT_NE(e.find(expect), std::string::npos) << e;
    EXPECT_TRUE(peer.closed_by_peer(5000));
    dt_transport_request_t later{};
    EXPECT_EQ(rank0.irecv(1, 5, buf.data(), buf.size(), &later), DTP_ERR_PROTOCOL);
}

} // namespace

TEST(TcpFaults, FrameWithBadMagicFailsPendingReceives) {
    dt::tcp::FrameHeader h{0xdeadbeef, 0, 5, 10};
    garbage_frame(h, "bad frame magic 0xdeadbeef");
}

TEST(TcpFaults, FrameWithAbsurdLengthFailsPendingReceives) {
    dt::tcp::FrameHeader h{dt::tcp::kFrameMagic, 0, 5, uint64_t{1} << 50};
    garbage_frame(h, "exceeds the limit");
}

TEST(TcpFaults, FrameAboveConfiguredLimitFailsPendingReceives) {
    ScopedEnv env("DISTTRAIN_TCP_MAX_MESSAGE", "1000");
    dt::tcp::FrameHeader h{dt::tcp::kFrameMagic, 0, 5, 1001};
    garbage_frame(h, "frame of 1001 bytes exceeds the limit of 1000 bytes");
}

TEST(TcpFaults, UnauthenticatedConnectionsAreRefusedAndLogged) {
    ScopedEnv env("DISTTRAIN_TCP_HANDSHAKE_TIMEOUT_MS", "300");
    auto store = std::make_shared<MemStore>();
    Instance rank0(store, "tok");
    int32_t rc0 = -1;
    std::thread t([&] { rc0 = rank0.init(0, 2, 20000); });
    std::string addr;
    ASSERT_TRUE(store->get("addr/0", &addr, 20000));

    RawSocket garbage(addr), silent(addr), wrong_mac(addr);
    ASSERT_TRUE(garbage.ok() && silent.ok() && wrong_mac.ok());
    std::vector<uint8_t> junk(200, 0x5a);
    garbage.send_all(junk.data(), junk.size());
    EXPECT_FALSE(wrong_mac.handshake("not-the-token", 1, 0));
    EXPECT_TRUE(garbage.closed_by_peer(5000));
    EXPECT_TRUE(silent.closed_by_peer(5000)) << "a silent connection times out";

    Instance rank1(store, "tok"); // the real rank 1 still gets in
    EXPECT_EQ(rank1.init(1, 2, 20000), DTP_OK) << rank1.host.last_error();
    t.join();
    ASSERT_EQ(rc0, DTP_OK) << rank0.host.last_error();

    // After init the listener still refuses strangers, and the job goes on.
    RawSocket late(addr);
    ASSERT_TRUE(late.ok());
    late.send_all(junk.data(), junk.size());
    rank0.spin(100);
    EXPECT_TRUE(late.closed_by_peer(5000));
    RawSocket duplicate(addr); // right token, but rank 1 is already connected
    ASSERT_TRUE(duplicate.ok());
    std::thread spinner([&] { rank0.spin(300); });
    EXPECT_FALSE(duplicate.handshake("tok", 1, 0) && !duplicate.closed_by_peer(2000));
    spinner.join();

    std::string log = rank0.host.logs();
    EXPECT_NE(log.find("refused connection from 127.0.0.1:"), std::string::npos) << log;
    EXPECT_NE(log.find("bad magic"), std::string::npos) << log;
    EXPECT_NE(log.find("no complete handshake within 300 ms"), std::string::npos) << log;
    EXPECT_NE(log.find("does not hold this job's token"), std::string::npos) << log;
    EXPECT_NE(log.find("rank 1 is already connected"), std::string::npos) << log;

    uint32_t out = 7, in = 0;
    dt_transport_request_t s{}, r{};
    ASSERT_GE(rank0.irecv(1, 2, &in, 4, &r), 0);
    ASSERT_GE(rank1.isend(0, 2, &out, 4, &s), 0);
    EXPECT_EQ(rank1.wait(&s), DTP_OK);
    EXPECT_EQ(rank0.wait(&r), DTP_OK);
    EXPECT_EQ(in, 7u);
}

TEST(TcpFaults, PeerThatLeavesMidTransferFailsRequestsWithPeerLost) {
    auto store = std::make_shared<MemStore>();
    const size_t size = size_t{64} << 20;
    std::vector<int32_t> rcs(2, -1);
    Instance r0(store, "tok"), r1(store, "tok");
    std::thread t0([&] { rcs[0] = r0.init(0, 2); });
    rcs[1] = r1.init(1, 2);
    t0.join();
    ASSERT_EQ(rcs[0], DTP_OK);
    ASSERT_EQ(rcs[1], DTP_OK);

    std::vector<uint8_t> out(size, 1), in(size);
    dt_transport_request_t send{}, recv{};
    ASSERT_EQ(r1.irecv(0, 77, in.data(), size, &recv), DTP_INPROGRESS);
    ASSERT_GE(r0.isend(1, 77, out.data(), size, &send), 0);
    r0.spin(5); // part of the message is on its way; rank 1 is not reading yet
    EXPECT_EQ(send.status, DTP_INPROGRESS) << "64 MiB cannot fit in socket buffers";
    r0.finalize();
    EXPECT_EQ(send.status, DTP_ERR_ABORTED) << "finalize fails what is pending";

    EXPECT_EQ(r1.wait(&recv, 20000), DTP_ERR_PEER_LOST);
    std::string e = r1.host.last_error();
    EXPECT_NE(e.find("lost connection to rank 0 (127.0.0.1:"), std::string::npos) << e;
    dt_transport_request_t later_recv{}, later_send{};
    EXPECT_EQ(r1.irecv(0, 78, in.data(), 1, &later_recv), DTP_ERR_PEER_LOST);
    EXPECT_EQ(later_recv.status, DTP_ERR_PEER_LOST);
    EXPECT_EQ(r1.isend(0, 78, out.data(), 1, &later_send), DTP_ERR_PEER_LOST);
    EXPECT_NE(r1.host.logs().find("[WARN] tcp: lost connection to rank 0"), std::string::npos);
}

TEST(TcpFaults, SendToAPeerThatDiedFailsWithPeerLost) {
    auto store = std::make_shared<MemStore>();
    std::vector<int32_t> rcs(2, -1);
    Instance r0(store, "tok"), r1(store, "tok");
    std::thread t0([&] { rcs[0] = r0.init(0, 2); });
    rcs[1] = r1.init(1, 2);
    t0.join();
    ASSERT_EQ(rcs[0], DTP_OK);
    ASSERT_EQ(rcs[1], DTP_OK);
    r0.finalize();
    // Rank 1 only sends (never reads): the send path alone must notice, without SIGPIPE.
    std::vector<uint8_t> out(8 << 20, 3);
    int32_t status = DTP_OK;
    for (int i = 0; i < 20 && status == DTP_OK; ++i) {
        dt_transport_request_t s{};
        r1.isend(0, 1, out.data(), out.size(), &s);
        status = r1.wait(&s, 10000);
    }
    EXPECT_EQ(status, DTP_ERR_PEER_LOST);
    EXPECT_NE(r1.host.last_error().find("lost connection to rank 0"), std::string::npos)
        << r1.host.last_error();
}

TEST(TcpFaults, ReceivePostedWhileAnUnexpectedFrameArrivesGetsThatFrame) {
    // Rank 0 starts buffering a small frame nobody asked for; a receive posted before
    // its last byte arrives must still get it, and the next frame with the tag after it.
    RawRank1 pair;
    ASSERT_TRUE(pair.start());
    std::vector<uint8_t> first(60000), second(100);
    fill(first, 1);
    fill(second, 2);
    auto h1 = dt::tcp::make_frame(8, first.size());
    auto h2 = dt::tcp::make_frame(8, second.size());
    ASSERT_TRUE(pair.peer->send_all(&h1, sizeof(h1)));
    ASSERT_TRUE(pair.peer->send_all(first.data(), 30000));
    pair.rank0.spin(30);
    std::vector<uint8_t> in1(first.size()), in2(second.size());
    dt_transport_request_t r1{}, r2{};
    ASSERT_EQ(pair.rank0.irecv(1, 8, in1.data(), in1.size(), &r1), DTP_INPROGRESS);
    ASSERT_EQ(pair.rank0.irecv(1, 8, in2.data(), in2.size(), &r2), DTP_INPROGRESS);
    ASSERT_TRUE(pair.peer->send_all(first.data() + 30000, first.size() - 30000));
    ASSERT_TRUE(pair.peer->send_all(&h2, sizeof(h2)));
    ASSERT_TRUE(pair.peer->send_all(second.data(), second.size()));
    EXPECT_EQ(pair.rank0.wait(&r1, 10000), DTP_OK) << pair.rank0.host.last_error();
    EXPECT_EQ(pair.rank0.wait(&r2, 10000), DTP_OK) << pair.rank0.host.last_error();
    EXPECT_EQ(r1.bytes, first.size());
    EXPECT_TRUE(check(in1, in1.size(), 1));
    EXPECT_EQ(r2.bytes, second.size());
    EXPECT_TRUE(check(in2, in2.size(), 2));
}

TEST(TcpFaults, AFrameSentBeforeAResetArrivesWhenASendMeetsTheReset) {
    // A rank that leaves sends its notice, then exits with bytes of ours unread: its
    // reset reaches us before we read the notice. The send that meets the reset must
    // not throw the notice away with the connection: it is why the peer left.
    RawRank1 pair;
    ASSERT_TRUE(pair.start());
    const std::string why = "rank 1 found the ranks disagree";
    char in[64] = {};
    dt_transport_request_t notice{};
    ASSERT_EQ(pair.rank0.irecv(1, 9, in, sizeof in, &notice), DTP_INPROGRESS);
    auto h = dt::tcp::make_frame(9, why.size());
    ASSERT_TRUE(pair.peer->send_all(&h, sizeof(h)));
    ASSERT_TRUE(pair.peer->send_all(why.data(), why.size()));
    std::vector<uint8_t> data(1 << 20);
    dt_transport_request_t unread{};
    pair.rank0.isend(1, 5, data.data(), 1000, &unread); // left unread by rank 1
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pair.peer->reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    dt_transport_request_t send{};
    pair.rank0.isend(1, 6, data.data(), data.size(), &send);
    EXPECT_EQ(pair.rank0.wait(&send, 10000), DTP_ERR_PEER_LOST);
    EXPECT_EQ(pair.rank0.wait(&notice, 10000), DTP_OK) << pair.rank0.host.last_error();
    EXPECT_EQ(std::string(in, notice.bytes), why);
}

TEST(TcpFaults, PeerThatFinalizesBetweenFramesIsInfoNotWarning) {
    // Peers finalize at slightly different times: a clean close between frames is the end
    // of a job, logged at info even with a receive still posted (the core keeps some
    // posted for the whole job); the request still fails with the peer named.
    auto store = std::make_shared<MemStore>();
    std::vector<int32_t> rcs(2, -1);
    Instance r0(store, "tok"), r1(store, "tok");
    std::thread t0([&] { rcs[0] = r0.init(0, 2); });
    rcs[1] = r1.init(1, 2);
    t0.join();
    ASSERT_EQ(rcs[0], DTP_OK);
    ASSERT_EQ(rcs[1], DTP_OK);
    uint8_t byte = 0;
    dt_transport_request_t recv{};
    ASSERT_EQ(r1.irecv(0, 5, &byte, 1, &recv), DTP_INPROGRESS);
    r0.finalize();
    EXPECT_EQ(r1.wait(&recv, 20000), DTP_ERR_PEER_LOST);
    EXPECT_NE(r1.host.last_error().find("lost connection to rank 0"), std::string::npos)
        << r1.host.last_error();
    std::string log = r1.host.logs();
    EXPECT_NE(log.find("[INFO] tcp: lost connection to rank 0"), std::string::npos) << log;
    EXPECT_EQ(log.find("[WARN]"), std::string::npos) << log;
}

// SPDX-License-Identifier: Apache-2.0
// Stress: many outstanding sends and receives on one tag, in the shapes the core's
// algorithms produce (the pipelined-chain broadcast: 64 KiB segments, the root posting
// every send at once, receivers posting a few ahead and forwarding). Payloads are
// patterned per message and checked byte by byte, so a frame matched to the wrong
// receive, completed early, or spliced from two messages is caught.
#include "tcp_test_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <thread>

using namespace tcptest;

namespace {

using Clock = std::chrono::steady_clock;

// Byte i of message `msg` of round `round`: differs between neighbouring messages, so a
// payload in the wrong place cannot pass.
uint8_t pattern(uint32_t round, size_t i) {
    uint64_t x = (uint64_t{round} << 32) ^ i;
    x *= 0x9E3779B97F4A7C15ull;
    return static_cast<uint8_t>(x >> 56);
}

void fill_round(uint8_t *buf, size_t len, uint32_t round) {
    for (size_t i = 0; i < len; ++i) buf[i] = pattern(round, i);
}

// The first index where buf differs from the round's pattern, or len.
size_t first_wrong(const uint8_t *buf, size_t len, uint32_t round) {
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != pattern(round, i)) return i;
    }
    return len;
}

// Waits like the core's Comm::wait: polls a few microseconds, then blocks briefly.
int32_t core_wait(Instance &inst, dt_transport_request_t *r, int timeout_ms = 10000) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    auto spin_end = Clock::now() + std::chrono::microseconds(30);
    while (r->status == DTP_INPROGRESS) {
        if (Clock::now() >= deadline) return kWaitTimedOut;
        inst.progress(Clock::now() < spin_end ? 0 : 5);
    }
    return r->status;
}

// A random pause with progress: lets frames arrive before their receive is posted.
void jitter(Instance &inst, std::mt19937 &rng) {
    switch (rng() % 8) {
    case 0: inst.progress(0); break;
    case 1: std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300)); break;
    case 2: inst.progress(1); break;
    default: break;
    }
}

// One pipelined-chain broadcast exactly as core/algorithms/broadcast.cc runs it.
void chain_broadcast(Instance &inst, int size, uint8_t *buf, size_t bytes, int root,
                     uint64_t tag, std::mt19937 &rng) {
    constexpr size_t kSeg = 64 * 1024;
    constexpr size_t kAhead = 4;
    const int vr = (inst.rank - root + size) % size;
    const int prev = (inst.rank - 1 + size) % size, next = (inst.rank + 1) % size;
    std::deque<dt_transport_request_t> sends; // deque: elements never move
    if (vr == 0) {
        for (size_t off = 0; off < bytes; off += kSeg) {
            sends.emplace_back();
            ASSERT_GE(inst.isend(next, tag, buf + off, std::min(kSeg, bytes - off),
                                 &sends.back()), 0);
        }
    } else {
        struct Recv {
            size_t off, len;
            dt_transport_request_t req;
        };
        std::deque<Recv> inflight;
        size_t posted = 0;
        while (posted < bytes || !inflight.empty()) {
            while (posted < bytes && inflight.size() < kAhead) {
                size_t len = std::min(kSeg, bytes - posted);
                inflight.push_back(Recv{posted, len, {}});
                ASSERT_GE(inst.irecv(prev, tag, buf + posted, len, &inflight.back().req), 0);
                posted += len;
            }
            jitter(inst, rng);
            Recv &r = inflight.front();
            ASSERT_EQ(core_wait(inst, &r.req), DTP_OK) << inst.host.last_error();
            ASSERT_EQ(r.req.bytes, r.len)
                << "rank " << inst.rank << " segment at " << r.off << " of " << bytes
                << " got a frame of another size (matched out of order)";
            if (vr + 1 < size) {
                sends.emplace_back();
                ASSERT_GE(inst.isend(next, tag, buf + r.off, r.len, &sends.back()), 0);
            }
            inflight.pop_front();
        }
    }
    for (auto &s : sends) ASSERT_EQ(core_wait(inst, &s), DTP_OK) << inst.host.last_error();
}

} // namespace

// Socket buffer size (DISTTRAIN_TCP_SOCKBUF): the default, and small buffers that make
// every 64 KiB frame arrive in pieces, so receives are often posted while a frame
// nobody has asked for yet is half in (the case that once matched frames out of order).
class TcpStress : public ::testing::TestWithParam<const char *> {
protected:
    void SetUp() override {
        if (GetParam()[0] != '\0') env_.emplace("DISTTRAIN_TCP_SOCKBUF", GetParam());
    }
    std::optional<ScopedEnv> env_;
};

INSTANTIATE_TEST_SUITE_P(Sockbuf, TcpStress, ::testing::Values("", "8192"),
                         [](const auto &info) {
                             return std::string(info.param[0] ? info.param : "default");
                         });

// Many chain broadcasts with rotating roots and sizes around the 64 KiB segment size.
TEST_P(TcpStress, ChainBroadcastKeepsSegmentsInOrder) {
    constexpr int kRanks = 4;
    constexpr int kRounds = 48;
    const size_t sizes[] = {400012, 800024, 262145, 65536 * 5, 65536 * 4 + 65535, 300000};
    run_ranks(kRanks, [&](Instance &inst) {
        std::mt19937 rng(1234 + inst.rank);
        std::vector<uint8_t> buf(*std::max_element(std::begin(sizes), std::end(sizes)));
        for (uint32_t round = 0; round < kRounds; ++round) {
            const size_t bytes = sizes[round % std::size(sizes)];
            const int root = static_cast<int>(round % kRanks);
            if (inst.rank == root) fill_round(buf.data(), bytes, round);
            else std::memset(buf.data(), 0xEE, bytes); // stale data must not survive
            chain_broadcast(inst, kRanks, buf.data(), bytes, root, 1000 + round, rng);
            if (::testing::Test::HasFatalFailure()) return;
            size_t bad = first_wrong(buf.data(), bytes, round);
            ASSERT_EQ(bad, bytes) << "rank " << inst.rank << " round " << round << " root "
                                  << root << ": byte " << bad << " of " << bytes
                                  << " is wrong (segment " << bad / 65536 << ")";
        }
    });
}

// One tag, many messages in flight both ways at once with odd sizes around the
// buffering threshold; receives posted ahead in a window, some late.
TEST_P(TcpStress, ManyOutstandingMixedSizesOnOneTag) {
    constexpr int kMessages = 400;
    const size_t sizes[] = {65536, 6796, 65535, 65537, 1, 0, 24, 131072, 16384, 16383, 99999};
    run_ranks(2, [&](Instance &inst) {
        std::mt19937 rng(77 + inst.rank);
        const int peer = 1 - inst.rank;
        std::vector<std::vector<uint8_t>> out(kMessages), in(kMessages);
        std::vector<dt_transport_request_t> sreq(kMessages), rreq(kMessages);
        for (int m = 0; m < kMessages; ++m) {
            size_t len = sizes[(m * 7 + inst.rank) % std::size(sizes)];
            out[m].resize(len);
            fill_round(out[m].data(), len, static_cast<uint32_t>(m * 2 + inst.rank));
        }
        // Receives are posted up to `window` ahead; sends go out in bursts.
        int sent = 0, posted = 0, done = 0;
        const int window = 3 + inst.rank * 2;
        while (done < kMessages) {
            int burst = static_cast<int>(rng() % 12);
            for (int i = 0; i < burst && sent < kMessages; ++i, ++sent) {
                ASSERT_GE(inst.isend(peer, 7, out[sent].data(), out[sent].size(), &sreq[sent]),
                          0);
            }
            while (posted < kMessages && posted - done < window) {
                size_t len = sizes[(posted * 7 + peer) % std::size(sizes)];
                in[posted].assign(len, 0xEE);
                ASSERT_GE(inst.irecv(peer, 7, in[posted].data(), len, &rreq[posted]), 0);
                ++posted;
            }
            jitter(inst, rng);
            if (done < posted && (rreq[done].status != DTP_INPROGRESS || sent == kMessages)) {
                ASSERT_EQ(core_wait(inst, &rreq[done]), DTP_OK) << inst.host.last_error();
                ASSERT_EQ(rreq[done].bytes, in[done].size()) << "message " << done;
                size_t bad = first_wrong(in[done].data(), in[done].size(),
                                         static_cast<uint32_t>(done * 2 + peer));
                ASSERT_EQ(bad, in[done].size())
                    << "rank " << inst.rank << " message " << done << " byte " << bad;
                ++done;
            } else {
                inst.progress(0);
            }
        }
        for (int m = 0; m < kMessages; ++m) ASSERT_EQ(core_wait(inst, &sreq[m]), DTP_OK);
    });
}

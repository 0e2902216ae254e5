// SPDX-License-Identifier: Apache-2.0
// allgatherv and alltoallv on 1..5 ranks: uneven and empty blocks, in place, and ranks
// that disagree on the counts (an error on every rank that names them, never a hang).
#include "algorithms/algorithms.h"
#include "harness.h"
#include "reference.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dt::test {
namespace {

Bytes pattern(size_t bytes, int rank, int block = 0)
{
    Bytes out(bytes);
    for (size_t i = 0; i < bytes; ++i)
        out[i] = static_cast<std::byte>((i * 13 + static_cast<size_t>(rank) * 59 +
                                         static_cast<size_t>(block) * 5 + 1) &
                                        0xff);
    return out;
}

// Counts in elements: rank r's block count, some empty, one large enough to take the
// transport's large-message path.
size_t count_of(int r, int j = 0) { return static_cast<size_t>((r * 7 + j * 3) % 5) * 301; }

constexpr size_t kElem = 4; // bytes per element in these tests

TEST(AllgathervRing, UnevenAndEmptyBlocksInAndOutOfPlace)
{
    for (int p = 1; p <= 5; ++p) {
        for (bool in_place : {false, true}) {
            SCOPED_TRACE(testing::Message() << "ranks=" << p << (in_place ? " in place" : ""));
            std::vector<size_t> counts(static_cast<size_t>(p));
            for (int r = 0; r < p; ++r)
                counts[r] = count_of(r);
            if (p > 2)
                counts[1] = 0; // an empty block in the middle of the ring
            std::vector<size_t> at(static_cast<size_t>(p) + 1, 0);
            for (int r = 0; r < p; ++r)
                at[r + 1] = at[r] + counts[r] * kElem;
            Bytes want;
            std::vector<Bytes> send, recv;
            for (int r = 0; r < p; ++r) {
                send.push_back(pattern(counts[r] * kElem, r));
                want.insert(want.end(), send[r].begin(), send[r].end());
                recv.push_back(Bytes(at[p], std::byte{0xee}));
                if (in_place)
                    std::copy(send[r].begin(), send[r].end(), recv[r].begin() + at[r]);
            }
            expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
                const int r = comm.rank();
                const void *sb = in_place ? recv[r].data() + at[r] : send[r].data();
                algo::allgatherv_ring(comm, sb, recv[r].data(), counts.data(), kElem, "t");
            }));
            for (int r = 0; r < p; ++r)
                EXPECT_TRUE(recv[r] == want) << "rank " << r;
        }
    }
}

TEST(AllgathervRing, DisagreeingRecvcountsFailEveryRankNamingThem)
{
    for (int p : {2, 3, 4}) {
        SCOPED_TRACE(testing::Message() << "ranks=" << p);
        // Every rank sends 3 elements, but rank 1 expects 4 from rank 0 (its recvbuf is
        // sized for its view, so an overrun would show under the sanitizers).
        std::vector<std::vector<size_t>> counts(static_cast<size_t>(p),
                                                std::vector<size_t>(static_cast<size_t>(p), 3));
        counts[1][0] = 4;
        std::vector<Bytes> recv;
        for (int r = 0; r < p; ++r)
            recv.push_back(Bytes(std::accumulate(counts[r].begin(), counts[r].end(), size_t{0}) *
                                 kElem));
        const Bytes send = pattern(3 * kElem, 0);
        auto outcomes = run_ranks(p, [&](algo::Comm &comm) {
            const int r = comm.rank();
            try {
                algo::allgatherv_ring(comm, send.data(), recv[r].data(), counts[r].data(),
                                      kElem, "grads");
            } catch (const AgreedFailure &) {
                throw; // what the engine turns into a failed call, the context going on
            } catch (const Error &e) {
                throw Error(DT_ERR_INTERNAL, cat("not an agreed failure: ", e.what()));
            }
        });
        for (int r = 0; r < p; ++r) {
            EXPECT_EQ(outcomes[r].status, DT_ERR_MISMATCH) << "rank " << r << ": "
                                                           << outcomes[r].message;
            EXPECT_NE(outcomes[r].message.find("allgatherv 'grads'"), std::string::npos)
                << outcomes[r].message;
            EXPECT_NE(outcomes[r].message.find("rank 1 passes recvcounts[0] = 4 but rank 0 "
                                               "sends 3"),
                      std::string::npos)
                << outcomes[r].message;
        }
    }
}

TEST(AlltoallvPairwise, UnevenAndEmptyBlocks)
{
    for (int p = 1; p <= 5; ++p) {
        SCOPED_TRACE(testing::Message() << "ranks=" << p);
        // Rank i sends count_of(i, j) elements to rank j.
        auto sends = [&](int i, int j) { return count_of(i, j); };
        std::vector<std::vector<size_t>> scount(p), rcount(p);
        std::vector<Bytes> send(p), recv(p);
        for (int r = 0; r < p; ++r) {
            for (int j = 0; j < p; ++j) {
                scount[r].push_back(sends(r, j));
                rcount[r].push_back(sends(j, r));
                Bytes b = pattern(sends(r, j) * kElem, r, j);
                send[r].insert(send[r].end(), b.begin(), b.end());
            }
            recv[r] = Bytes(std::accumulate(rcount[r].begin(), rcount[r].end(), size_t{0}) *
                                kElem,
                            std::byte{0xee});
        }
        expect_all_ok(run_ranks(p, [&](algo::Comm &comm) {
            const int r = comm.rank();
            algo::alltoallv_pairwise(comm, send[r].data(), scount[r].data(), recv[r].data(),
                                     rcount[r].data(), kElem, "t");
        }));
        for (int r = 0; r < p; ++r) {
            Bytes want;
            for (int i = 0; i < p; ++i) {
                Bytes b = pattern(sends(i, r) * kElem, i, r);
                want.insert(want.end(), b.begin(), b.end());
            }
            EXPECT_TRUE(recv[r] == want) << "rank " << r;
        }
    }
}

TEST(AlltoallvPairwise, DisagreeingPairFailsEveryRankNamingIt)
{
    for (int p : {2, 3, 4}) {
        SCOPED_TRACE(testing::Message() << "ranks=" << p);
        std::vector<std::vector<size_t>> scount(p, std::vector<size_t>(p, 2)),
            rcount(p, std::vector<size_t>(p, 2));
        rcount[0][1] = 5; // rank 0 expects 5 from rank 1, which sends 2
        std::vector<Bytes> send(p, Bytes(2 * p * kElem)), recv(p);
        for (int r = 0; r < p; ++r)
            recv[r] = Bytes(std::accumulate(rcount[r].begin(), rcount[r].end(), size_t{0}) *
                            kElem);
        auto outcomes = run_ranks(p, [&](algo::Comm &comm) {
            const int r = comm.rank();
            algo::alltoallv_pairwise(comm, send[r].data(), scount[r].data(), recv[r].data(),
                                     rcount[r].data(), kElem, "experts");
        });
        for (int r = 0; r < p; ++r) {
            EXPECT_EQ(outcomes[r].status, DT_ERR_MISMATCH) << "rank " << r;
            EXPECT_NE(outcomes[r].message.find("alltoallv 'experts': ranks disagree on counts: "
                                               "rank 0 expects recvcounts[1] = 5 from rank 1, "
                                               "which sends sendcounts[0] = 2"),
                      std::string::npos)
                << outcomes[r].message;
        }
    }
}

} // namespace
} // namespace dt::test

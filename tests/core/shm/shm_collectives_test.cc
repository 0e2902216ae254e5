// SPDX-License-Identifier: Apache-2.0
// Every shared-memory collective x dtype x op on 2, 3 and 4 ranks (threads of this
// process, each with its own Domain), on every path: inline, one-shot and pipelined with
// a staging area small enough that pieces cycle through the slots many times, and the
// single-copy allreduce (process_vm_readv of this same process: threads share it) with
// pieces small enough that every call takes many, against the staging path bit for bit.
#include "shm_harness.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sstream>

namespace dt::shm::testing {
namespace {

constexpr dt_dtype_t kDtypes[] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_BFLOAT16,
                                  DT_INT8,    DT_UINT8,   DT_INT32,   DT_INT64};
constexpr dt_reduce_op_t kOps[] = {DT_SUM, DT_PROD, DT_MIN, DT_MAX};
// Inline (<= 56 bytes), one-shot (<= 32 KiB), and pipelined: the 64 KiB staging area
// below holds 16 KiB slots, so ~70 KB take more pieces than there are slots; odd counts
// leave ragged slices.
std::vector<size_t> counts(dt_dtype_t dtype)
{
    return {1, 5, 1000, 70000 / dt_dtype_size(dtype) + 13};
}
constexpr size_t kStaging = 64 * 1024;

// Collects mismatches without throwing: a rank that stopped early would leave the
// others waiting.
struct Checker {
    std::ostringstream out;
    int failures = 0;
    // what() builds the message only for a failure.
    template <typename What>
    void check(bool ok, What &&what)
    {
        if (!ok && failures++ < 5)
            out << what() << "\n";
    }
    void finish()
    {
        if (failures > 0)
            throw Error(DT_ERR_INTERNAL, out.str() + std::to_string(failures) + " failures");
    }
};

std::string describe(const char *coll, dt_dtype_t dtype, dt_reduce_op_t op, size_t count,
                     size_t i, double got, double want)
{
    std::ostringstream s;
    s << coll << " dtype=" << dtype << " op=" << op << " count=" << count << " [" << i
      << "] got " << got << " want " << want;
    return s.str();
}

void expect_no_errors(const std::vector<std::string> &errors)
{
    for (size_t r = 0; r < errors.size(); ++r)
        EXPECT_EQ(errors[r], "") << "rank " << r;
}

class ShmRanks : public ::testing::TestWithParam<int> {};

TEST_P(ShmRanks, AllreduceEveryDtypeOpAndPath)
{
    expect_no_errors(run_threads(GetParam(), kStaging, [](Rank &r) {
        Checker c;
        for (dt_dtype_t dtype : kDtypes)
            for (dt_reduce_op_t op : kOps)
                for (size_t count : counts(dtype))
                    for (bool in_place : {false, true}) {
                        size_t bytes = count * dt_dtype_size(dtype);
                        std::vector<std::byte> send(bytes), recv(bytes);
                        fill(send.data(), count, dtype, r.rank, 0, op);
                        void *out = in_place ? send.data() : recv.data();
                        Team t = r.team();
                        allreduce(t, send.data(), out, count, dtype, op);
                        for (size_t i = 0; i < count; ++i) {
                            double got = read(out, i, dtype), want = expected(r.all, i, op);
                            c.check(got == want, [&] {
                                return describe("allreduce", dtype, op, count, i, got, want);
                            });
                        }
                    }
        c.finish();
    }));
}

TEST_P(ShmRanks, ReduceScatterEveryDtypeOp)
{
    expect_no_errors(run_threads(GetParam(), kStaging, [](Rank &r) {
        Checker c;
        for (dt_dtype_t dtype : kDtypes)
            for (dt_reduce_op_t op : kOps)
                for (size_t count : {size_t(1), size_t(333), 30000 / dt_dtype_size(dtype) + 11}) {
                    size_t es = dt_dtype_size(dtype);
                    std::vector<std::byte> send(count * r.size * es), recv(count * es);
                    fill(send.data(), count * r.size, dtype, r.rank, 0, op);
                    Team t = r.team();
                    reduce_scatter(t, send.data(), recv.data(), count, dtype, op);
                    for (size_t i = 0; i < count; ++i) {
                        size_t global = r.rank * count + i;
                        double got = read(recv.data(), i, dtype);
                        double want = expected(r.all, global, op);
                        c.check(got == want, [&] {
                            return describe("reduce_scatter", dtype, op, count, i, got, want);
                        });
                    }
                }
        c.finish();
    }));
}

// Bytes of rank `rank`'s block: distinct per rank and position.
std::byte pattern(int rank, size_t i) { return std::byte((rank * 31 + i * 7 + i / 251) & 0xff); }

TEST_P(ShmRanks, AllgatherBroadcastAlltoallBarrier)
{
    expect_no_errors(run_threads(GetParam(), kStaging, [](Rank &r) {
        Checker c;
        const int n = r.size;
        for (size_t block : {size_t(1), size_t(100), size_t(5000), size_t(70001)}) {
            // allgather
            std::vector<std::byte> mine(block), all(block * n);
            for (size_t i = 0; i < block; ++i)
                mine[i] = pattern(r.rank, i);
            {
                Team t = r.team();
                allgather(t, mine.data(), all.data(), block);
            }
            for (int p = 0; p < n; ++p)
                for (size_t i = 0; i < block; ++i)
                    c.check(all[p * block + i] == pattern(p, i),
                            [&] { return "allgather block " + std::to_string(block); });
            // broadcast from every root
            for (int root = 0; root < n; ++root) {
                std::vector<std::byte> buf(block);
                for (size_t i = 0; i < block; ++i)
                    buf[i] = r.rank == root ? pattern(root, i) : std::byte(0);
                Team t = r.team();
                broadcast(t, buf.data(), block, root);
                for (size_t i = 0; i < block; ++i)
                    c.check(buf[i] == pattern(root, i),
                            [&] { return "broadcast root " + std::to_string(root); });
            }
            // alltoall: rank s's block d is pattern(s * n + d)
            std::vector<std::byte> send(block * n), recv(block * n);
            for (int d = 0; d < n; ++d)
                for (size_t i = 0; i < block; ++i)
                    send[d * block + i] = pattern(r.rank * n + d, i);
            {
                Team t = r.team();
                alltoall(t, send.data(), recv.data(), block);
            }
            for (int s = 0; s < n; ++s)
                for (size_t i = 0; i < block; ++i)
                    c.check(recv[s * block + i] == pattern(s * n + r.rank, i),
                            [&] { return "alltoall block " + std::to_string(block); });
            Team t = r.team();
            barrier(t);
        }
        c.finish();
    }));
}

// Single-copy reads forced from just above the inline limit, in 4 KiB pieces.
ThreadOptions single_copy_options()
{
    ThreadOptions o;
    o.data_bytes = kStaging;
    o.cma.min_bytes = kInlineBytes + 1;
    o.cma.piece_bytes = 4096;
    o.staging_twin = true;
    return o;
}

TEST_P(ShmRanks, AllreduceSingleCopyMatchesStagingBitForBit)
{
    expect_no_errors(run_threads(GetParam(), single_copy_options(), [](Rank &r) {
        Checker c;
        ASSERT_TRUE(r.domain->cma(r.rank)) << "the probe of this very process failed";
        for (dt_dtype_t dtype : kDtypes)
            for (dt_reduce_op_t op : kOps)
                for (size_t count : {kInlineBytes / dt_dtype_size(dtype) + 1, size_t(1000),
                                     70000 / dt_dtype_size(dtype) + 13,
                                     300000 / dt_dtype_size(dtype) + 7})
                    for (bool in_place : {false, true}) {
                        const size_t bytes = count * dt_dtype_size(dtype);
                        std::vector<std::byte> send(bytes), recv(bytes), staged(bytes);
                        void *out = in_place ? send.data() : recv.data();
                        // Exact values first, then values whose reductions round.
                        fill(send.data(), count, dtype, r.rank, 0, op);
                        {
                            Team t = r.team();
                            allreduce(t, send.data(), out, count, dtype, op);
                        }
                        for (size_t i = 0; i < count; ++i) {
                            double got = read(out, i, dtype), want = expected(r.all, i, op);
                            c.check(got == want, [&] {
                                return describe("single-copy allreduce", dtype, op, count, i,
                                                got, want);
                            });
                        }
                        const uint64_t seed = r.rank * 1000003 + count * 31 + dtype * 7 + op;
                        fill_random(send.data(), count, dtype, op, seed);
                        {
                            Team t = r.team({}, std::chrono::seconds(30), r.twin.get());
                            allreduce(t, send.data(), staged.data(), count, dtype, op);
                        }
                        fill_random(send.data(), count, dtype, op, seed);
                        {
                            Team t = r.team();
                            allreduce(t, send.data(), out, count, dtype, op);
                        }
                        c.check(std::memcmp(out, staged.data(), bytes) == 0, [&] {
                            return describe("single-copy vs staging", dtype, op, count, 0, 0, 0) +
                                   (in_place ? " in place" : "") + ": the bits differ";
                        });
                    }
        c.check(r.domain->cma_calls() > 0, [] { return "no call took the single-copy path"; });
        c.check(r.twin->cma_calls() == 0, [] { return "DISTTRAIN_SHM_CMA=0 read a peer"; });
        c.finish();
    }));
}

// The pipelined path handing pieces over through memory (non-temporal stores) or through
// the cache, with buffers that start one element past a cache line, so each streamed
// copy has a partial line at both ends; in place, the ranks past the first two reduce
// into the staging area instead of their own buffer.
void expect_pipelined_results_exact(int ranks, bool via_memory)
{
    ThreadOptions o;
    o.data_bytes = kStaging;
    o.cma.enabled = false;
    o.tuning.stream_bytes = via_memory ? 0 : INT64_MAX;
    expect_no_errors(run_threads(ranks, o, [via_memory](Rank &r) {
        Checker c;
        for (dt_dtype_t dtype : {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_INT8})
            for (dt_reduce_op_t op : {DT_SUM, DT_MAX})
                for (size_t count : {70000 / dt_dtype_size(dtype) + 13,
                                     300000 / dt_dtype_size(dtype) + 7})
                    for (bool in_place : {false, true}) {
                        const size_t esize = dt_dtype_size(dtype);
                        const size_t bytes = count * esize;
                        std::vector<std::byte> send(bytes + 64), recv(bytes + 64);
                        // One element past a 64-byte boundary inside each vector.
                        auto skew = [&](std::vector<std::byte> &v) {
                            const auto a = reinterpret_cast<uintptr_t>(v.data());
                            return v.data() + ((64 - a % 64) % 64 + esize) % 64;
                        };
                        std::byte *in = skew(send);
                        std::byte *out = in_place ? in : skew(recv);
                        fill(in, count, dtype, r.rank, 0, op);
                        Team t = r.team();
                        allreduce(t, in, out, count, dtype, op);
                        for (size_t i = 0; i < count; ++i) {
                            double got = read(out, i, dtype), want = expected(r.all, i, op);
                            c.check(got == want, [&] {
                                return describe(via_memory ? "allreduce through memory"
                                                           : "allreduce through the cache",
                                                dtype, op, count, i, got, want);
                            });
                        }
                    }
        c.finish();
    }));
}

TEST_P(ShmRanks, AllreducePipelinedThroughMemoryOrCacheIsExact)
{
    expect_pipelined_results_exact(GetParam(), /*via_memory=*/true);
    expect_pipelined_results_exact(GetParam(), /*via_memory=*/false);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmRanks, ::testing::Values(2, 3, 4));

// DISTTRAIN_SHM_SLICE accepts any byte count: one smaller than an element (3 bytes of
// float32, 7 of float64) must still give whole elements per slice, not a division by zero.
TEST(ShmTuning, ASliceSmallerThanAnElementStillReduces)
{
    for (int64_t slice : {1, 3, 7, 65}) {
        ThreadOptions o;
        o.data_bytes = kStaging;
        o.tuning.slice_bytes = slice;
        expect_no_errors(run_threads(3, o, [](Rank &r) {
            Checker c;
            for (dt_dtype_t dtype : {DT_FLOAT32, DT_FLOAT64}) {
                const size_t count = 20000, es = dt_dtype_size(dtype);
                std::vector<std::byte> send(count * r.size * es), recv(count * r.size * es);
                fill(send.data(), count * r.size, dtype, r.rank, 0, DT_SUM);
                Team t = r.team();
                allreduce(t, send.data(), recv.data(), count * r.size, dtype, DT_SUM);
                for (size_t i = 0; i < count * r.size; ++i) {
                    double got = read(recv.data(), i, dtype), want = expected(r.all, i, DT_SUM);
                    c.check(got == want, [&] {
                        return describe("allreduce", dtype, DT_SUM, count, i, got, want);
                    });
                }
                Team t2 = r.team();
                reduce_scatter(t2, send.data(), recv.data(), count, dtype, DT_SUM);
                for (size_t i = 0; i < count; ++i) {
                    double got = read(recv.data(), i, dtype);
                    double want = expected(r.all, r.rank * count + i, DT_SUM);
                    c.check(got == want, [&] {
                        return describe("reduce_scatter", dtype, DT_SUM, count, i, got, want);
                    });
                }
            }
            c.finish();
        }));
    }
}

// Calls among subsets between calls among all: the acknowledgements that let a rank
// reuse its segment must follow whoever read it last; with single-copy reads on and off.
class ShmSubsets : public ::testing::TestWithParam<bool> {};

TEST_P(ShmSubsets, SubsetsInterleaveWithWholeTeams)
{
    ThreadOptions o = single_copy_options();
    o.cma.enabled = GetParam();
    o.staging_twin = false;
    expect_no_errors(run_threads(4, o, [](Rank &r) {
        Checker c;
        const std::vector<std::vector<int>> teams = {{}, {1, 3}, {0, 1, 2}, {}, {2, 0}, {3, 1}};
        for (int round = 0; round < 20; ++round)
            for (const auto &members : teams) {
                std::vector<int> who = members.empty() ? r.all : members;
                bool in = std::find(who.begin(), who.end(), r.rank) != who.end();
                r.next_tag += in ? 0 : 1; // tags stay in step, as the engine's do
                if (!in)
                    continue;
                size_t count = round % 2 == 0 ? 3 : 9000;
                std::vector<float> send(count), recv(count);
                fill(send.data(), count, DT_FLOAT32, r.rank, 0, DT_SUM);
                Team t = r.team(members);
                allreduce(t, send.data(), recv.data(), count, DT_FLOAT32, DT_SUM);
                std::vector<int> sorted = who;
                for (size_t i = 0; i < count; ++i)
                    c.check(recv[i] == expected(sorted, i, DT_SUM),
                            [&] { return "subset allreduce round " + std::to_string(round); });
            }
        c.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(SingleCopy, ShmSubsets, ::testing::Bool());

} // namespace
} // namespace dt::shm::testing

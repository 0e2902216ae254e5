// SPDX-License-Identifier: Apache-2.0
// A rank program for test_uneven.py: what disttrain.hpp adds in API 1.2 (allgatherv,
// alltoallv) and the process sets and join it wraps, on 2+ ranks. Prints
// "cxx uneven ok" at the end; failures print "error: ..." and exit 1.
#include <disttrain/disttrain.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void wrong(const std::string &what)
{
    std::fprintf(stderr, "error: %s\n", what.c_str());
    std::exit(1);
}

void run()
{
    disttrain::context ctx;
    const int rank = ctx.rank(), size = ctx.size();

    // allgatherv: rank r sends r+1 copies of r.
    std::vector<std::size_t> counts;
    std::vector<double> want;
    for (int r = 0; r < size; ++r) {
        counts.push_back(static_cast<std::size_t>(r + 1));
        want.insert(want.end(), static_cast<std::size_t>(r + 1), double(r));
    }
    std::vector<double> mine(static_cast<std::size_t>(rank + 1), double(rank));
    std::vector<double> got(want.size(), -1);
    ctx.allgatherv(mine.data(), got.data(), mine.size(), counts, "gv");
    if (got != want)
        wrong("allgatherv");
    std::fill(got.begin(), got.end(), -1);
    ctx.allgatherv_async(mine.data(), got.data(), mine.size(), counts, "gv.async").wait();
    if (got != want)
        wrong("allgatherv_async");

    // alltoallv: rank i sends j+1 elements of 10*i+j to rank j.
    std::vector<std::size_t> sc, rc(static_cast<std::size_t>(size),
                                    static_cast<std::size_t>(rank + 1));
    std::vector<std::int32_t> send, recv(rc.size() * rc[0]), want_a;
    for (int j = 0; j < size; ++j) {
        sc.push_back(static_cast<std::size_t>(j + 1));
        send.insert(send.end(), static_cast<std::size_t>(j + 1), 10 * rank + j);
        want_a.insert(want_a.end(), static_cast<std::size_t>(rank + 1), 10 * j + rank);
    }
    ctx.alltoallv(send.data(), sc, recv.data(), rc, "av");
    if (recv != want_a)
        wrong("alltoallv");

    // A count array of the wrong length is refused before the C API reads it.
    try {
        ctx.allgatherv(mine.data(), got.data(), mine.size(), {1}, "short");
        if (size != 1)
            wrong("a short counts vector was accepted");
    } catch (const disttrain::error &e) {
        if (e.status() != DT_ERR_INVALID_ARGUMENT)
            wrong(std::string("short counts: ") + e.what());
    }

    // Ranks that disagree: an exception with DT_ERR_MISMATCH on every rank.
    if (size > 1) {
        std::vector<std::size_t> bad(static_cast<std::size_t>(size), 1);
        if (rank == 0)
            bad[1] = 2;
        std::vector<float> one(1, 1.0f), all(static_cast<std::size_t>(size) + 1);
        try {
            ctx.allgatherv(one.data(), all.data(), 1, bad, "gv.bad");
            wrong("a disagreeing allgatherv succeeded");
        } catch (const disttrain::error &e) {
            if (e.status() != DT_ERR_MISMATCH ||
                std::string(e.what()).find("rank 0 passes recvcounts[1] = 2") ==
                    std::string::npos)
                wrong(std::string("disagreeing allgatherv: ") + e.what());
        }
    }

    // Process sets: {0} and, with more ranks, the others.
    std::vector<int> first{0}, rest;
    for (int r = 1; r < size; ++r)
        rest.push_back(r);
    std::optional<disttrain::context> g0 = ctx.group(first);
    if (g0.has_value() != (rank == 0))
        wrong("group {0}: membership");
    if (!rest.empty()) {
        std::optional<disttrain::context> g1 = ctx.group(rest);
        if (g1.has_value() != (rank != 0))
            wrong("group of the others: membership");
        if (g1) {
            std::vector<int> x{1, 1};
            g1->allreduce(x, disttrain::reduce_op::sum, "in_rest");
            if (g1->rank() != rank - 1 || x[0] != size - 1)
                wrong("group of the others: rank or sum");
        }
    }

    // Join: rank 0 is out of data; the others reduce once more without it.
    if (rank != 0) {
        std::vector<float> x{1.0f};
        ctx.allreduce(x, disttrain::reduce_op::sum, "after_join");
        if (x[0] != float(size - 1))
            wrong("allreduce while rank 0 joined");
    }
    const int last = ctx.join();
    if (size > 1 && last == 0)
        wrong("join: rank 0 joined first but is reported last");
    // Sizes negotiated: rank r passes r + 1 elements of value r.
    {
        std::vector<int> mine(static_cast<std::size_t>(rank + 1), rank);
        std::vector<std::size_t> got_counts;
        std::vector<int> all = ctx.allgather_uneven(mine, &got_counts, "negotiated");
        std::size_t at = 0;
        for (int r = 0; r < size; ++r) {
            if (got_counts[static_cast<std::size_t>(r)] != static_cast<std::size_t>(r + 1))
                wrong("allgather_uneven: counts");
            for (int k = 0; k <= r; ++k)
                if (all.at(at++) != r)
                    wrong("allgather_uneven: values");
        }
        if (at != all.size())
            wrong("allgather_uneven: length");
    }

    // Elastic calls in a job that is not elastic: nobody waits; re-forming is refused.
    if (ctx.poll_joiners() != 0)
        wrong("poll_joiners outside an elastic job");
    try {
        ctx.reform();
        wrong("reform outside an elastic job succeeded");
    } catch (const disttrain::error &e) {
        if (e.status() != DT_ERR_INVALID_STATE)
            wrong("reform outside an elastic job: not DT_ERR_INVALID_STATE");
    }
    std::printf("cxx uneven ok\n");
}

} // namespace

int main()
{
    try {
        run();
    } catch (const disttrain::error &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

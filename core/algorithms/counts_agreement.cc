// SPDX-License-Identifier: Apache-2.0
#include "algorithms/counts_agreement.h"

#include "algorithms/algorithms.h"
#include "runtime/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dt::algo {

namespace {

// Disagreements named in a message; more are counted, not listed.
constexpr size_t kNamed = 4;

uint64_t counts_hash(const size_t *counts, int n)
{
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int i = 0; i < n; ++i) {
        h ^= static_cast<uint64_t>(counts[i]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h ^= h >> 31;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
    }
    return h;
}

template <typename Record>
std::vector<Record> gather(Comm &comm, const Record &mine)
{
    std::vector<Record> all(static_cast<size_t>(comm.size()));
    allgather_ring(comm, &mine, all.data(), sizeof(Record));
    return all;
}

// "rank 1 ...; rank 3 ...; and 2 more".
std::string join_listed(const std::vector<std::string> &items)
{
    std::string out;
    for (size_t i = 0; i < items.size() && i < kNamed; ++i)
        out += (i ? "; " : "") + items[i];
    if (items.size() > kNamed)
        out += cat("; and ", items.size() - kNamed, " more");
    return out;
}

} // namespace

void agree_allgatherv_counts(Comm &comm, const size_t *recvcounts, const char *what)
{
    const int p = comm.size();
    struct Summary {
        uint64_t count; // what this rank sends: its recvcounts[rank]
        uint64_t hash;  // of its whole recvcounts
    };
    const auto all = gather(comm, Summary{recvcounts[comm.rank()], counts_hash(recvcounts, p)});
    std::vector<size_t> sent(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r)
        sent[r] = static_cast<size_t>(all[r].count);
    const uint64_t agreed = counts_hash(sent.data(), p);
    bool disagree = false;
    for (const Summary &s : all)
        disagree = disagree || s.hash != agreed;
    if (!disagree)
        return;

    // Every rank saw the same summaries, so every rank is here: name each rank's first
    // count that differs from what its rank sends.
    struct First {
        int64_t index; // -1: none
        uint64_t value;
    };
    First mine{-1, 0};
    for (int r = 0; r < p && mine.index < 0; ++r)
        if (recvcounts[r] != sent[r])
            mine = {r, recvcounts[r]};
    const auto firsts = gather(comm, mine);
    std::vector<std::string> items;
    for (int r = 0; r < p; ++r)
        if (firsts[r].index >= 0)
            items.push_back(cat("rank ", r, " passes recvcounts[", firsts[r].index, "] = ",
                                firsts[r].value, " but rank ", firsts[r].index, " sends ",
                                sent[static_cast<size_t>(firsts[r].index)]));
    throw AgreedFailure(DT_ERR_MISMATCH,
                        cat(what, ": ranks disagree on recvcounts: ", join_listed(items),
                            "; every rank must pass the same recvcounts, recvcounts[r] being "
                            "rank r's sendcount"));
}

void agree_alltoallv_counts(Comm &comm, const size_t *sendcounts, const size_t *recvcounts,
                            const char *what)
{
    const int p = comm.size();
    std::vector<uint64_t> offered(sendcounts, sendcounts + p), incoming(static_cast<size_t>(p));
    alltoall_pairwise(comm, offered.data(), incoming.data(), sizeof(uint64_t));
    struct First {
        int64_t peer; // -1: none
        uint64_t sends;
        uint64_t expects;
    };
    First mine{-1, 0, 0};
    for (int j = 0; j < p && mine.peer < 0; ++j)
        if (incoming[j] != recvcounts[j])
            mine = {j, incoming[j], recvcounts[j]};
    const auto firsts = gather(comm, mine);
    std::vector<std::string> items;
    for (int r = 0; r < p; ++r) {
        const First &f = firsts[r];
        if (f.peer >= 0)
            items.push_back(cat("rank ", r, " expects recvcounts[", f.peer, "] = ", f.expects,
                                " from rank ", f.peer, ", which sends sendcounts[", r,
                                "] = ", f.sends));
    }
    if (items.empty())
        return;
    throw AgreedFailure(DT_ERR_MISMATCH,
                        cat(what, ": ranks disagree on counts: ", join_listed(items),
                            "; rank i's sendcounts[j] must equal rank j's recvcounts[i]"));
}

} // namespace dt::algo

// SPDX-License-Identifier: Apache-2.0
// Broadcast from root: a binomial tree (log2(p) rounds of whole-buffer sends) for small
// buffers, a pipelined chain root -> root+1 -> ... for large ones, where each rank
// forwards a segment as soon as it has it and the time approaches one buffer transfer.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"

#include <algorithm>
#include <deque>
#include <vector>

namespace dt::algo {

namespace {

using detail::wrap;

constexpr size_t kChainThresholdBytes = 256 * 1024;
constexpr size_t kChainSegmentBytes = 64 * 1024;
// Receives a chain rank keeps posted ahead of the one it forwards.
constexpr size_t kChainAhead = 4;

void binomial(Comm &comm, std::byte *buf, size_t bytes, int root)
{
    const int p = comm.size();
    const int vr = wrap(comm.rank() - root, p); // rank relative to root
    int mask = 1;
    while (mask < p) {
        if (vr & mask) {
            comm.recv(wrap(vr - mask + root, p), buf, bytes);
            break;
        }
        mask <<= 1;
    }
    std::vector<Request> sends;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p)
            sends.push_back(comm.isend(wrap(vr + mask + root, p), buf, bytes));
    for (auto &s : sends)
        comm.wait(s);
}

void chain(Comm &comm, std::byte *buf, size_t bytes, int root)
{
    const int p = comm.size();
    const int vr = wrap(comm.rank() - root, p);
    const int prev = wrap(comm.rank() - 1, p), next = wrap(comm.rank() + 1, p);
    const bool forwards = vr + 1 < p;
    std::vector<Request> sends;
    if (vr == 0) {
        for (size_t off = 0; off < bytes; off += kChainSegmentBytes)
            sends.push_back(comm.isend(next, buf + off, std::min(kChainSegmentBytes, bytes - off)));
    } else {
        std::deque<std::pair<size_t, Request>> inflight;
        size_t posted = 0;
        while (posted < bytes || !inflight.empty()) {
            while (posted < bytes && inflight.size() < kChainAhead) {
                size_t len = std::min(kChainSegmentBytes, bytes - posted);
                inflight.emplace_back(posted, comm.irecv(prev, buf + posted, len));
                posted += len;
            }
            auto [off, req] = std::move(inflight.front());
            inflight.pop_front();
            comm.wait(req);
            if (forwards)
                sends.push_back(
                    comm.isend(next, buf + off, std::min(kChainSegmentBytes, bytes - off)));
        }
    }
    for (auto &s : sends)
        comm.wait(s);
}

} // namespace

void broadcast(Comm &comm, void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= comm.size())
        throw_error(DT_ERR_INVALID_ARGUMENT, "broadcast: root ", root,
                    " is not a rank of this job (size ", comm.size(), ")");
    if (comm.size() == 1 || bytes == 0)
        return;
    auto *b = static_cast<std::byte *>(buf);
    if (bytes < kChainThresholdBytes)
        binomial(comm, b, bytes, root);
    else
        chain(comm, b, bytes, root);
}

} // namespace dt::algo

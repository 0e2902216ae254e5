// SPDX-License-Identifier: Apache-2.0
// Ring allgatherv: the ring allgather (allgather_ring.cc) with a block size per rank.
// The counts are checked first (counts_agreement.h), so every receive is posted for the
// exact bytes its sender forwards. Empty blocks travel as empty messages: every rank
// then takes the same p-1 steps whatever the counts.
#include "algorithms/algorithms.h"
#include "algorithms/counts_agreement.h"
#include "algorithms/partition.h"
#include "runtime/error.h"

#include <cstring>
#include <vector>

namespace dt::algo {

void allgatherv_ring(Comm &comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                     size_t elem_bytes, const char *name)
{
    const int p = comm.size(), r = comm.rank();
    agree_allgatherv_counts(comm, counts, cat("allgatherv '", name, "'").c_str());

    std::vector<size_t> offset(static_cast<size_t>(p) + 1, 0);
    for (int b = 0; b < p; ++b)
        offset[b + 1] = offset[b] + counts[b] * elem_bytes;
    auto *out = static_cast<std::byte *>(recvbuf);
    auto block = [&](int b) { return out + offset[detail::wrap(b, p)]; };
    auto bytes = [&](int b) { return counts[detail::wrap(b, p)] * elem_bytes; };
    if (bytes(r) > 0 && sendbuf != block(r)) // otherwise in place
        std::memcpy(block(r), sendbuf, bytes(r));
    if (p == 1)
        return;
    const int left = detail::wrap(r - 1, p), right = detail::wrap(r + 1, p);

    std::vector<Request> recvs(static_cast<size_t>(p - 1));
    for (int s = 0; s < p - 1; ++s)
        recvs[s] = comm.irecv(left, block(r - s - 1), bytes(r - s - 1));
    std::vector<Request> sends;
    sends.push_back(comm.isend(right, block(r), bytes(r)));
    for (int s = 0; s < p - 1; ++s) {
        comm.wait(recvs[s]);
        if (s < p - 2)
            sends.push_back(comm.isend(right, block(r - s - 1), bytes(r - s - 1)));
    }
    for (auto &req : sends)
        comm.wait(req);
}

} // namespace dt::algo

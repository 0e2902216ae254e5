// SPDX-License-Identifier: Apache-2.0
// Pairwise-exchange alltoallv: the pairwise alltoall (alltoall_pairwise.cc) with a block
// size per peer. The counts are checked first (counts_agreement.h), so each receive is
// posted for the exact bytes its sender sends. Empty blocks travel as empty messages:
// every step pairs the same ranks whatever the counts.
#include "algorithms/algorithms.h"
#include "algorithms/counts_agreement.h"
#include "algorithms/partition.h"
#include "runtime/error.h"

#include <cstring>
#include <vector>

namespace dt::algo {

void alltoallv_pairwise(Comm &comm, const void *sendbuf, const size_t *sendcounts,
                        void *recvbuf, const size_t *recvcounts, size_t elem_bytes,
                        const char *name)
{
    const int p = comm.size(), r = comm.rank();
    agree_alltoallv_counts(comm, sendcounts, recvcounts,
                           cat("alltoallv '", name, "'").c_str());

    std::vector<size_t> send_at(static_cast<size_t>(p), 0), recv_at(static_cast<size_t>(p), 0);
    for (int b = 1; b < p; ++b) {
        send_at[b] = send_at[b - 1] + sendcounts[b - 1] * elem_bytes;
        recv_at[b] = recv_at[b - 1] + recvcounts[b - 1] * elem_bytes;
    }
    auto *in = static_cast<const std::byte *>(sendbuf);
    auto *out = static_cast<std::byte *>(recvbuf);
    if (recvcounts[r] > 0)
        std::memcpy(out + recv_at[r], in + send_at[r], recvcounts[r] * elem_bytes);
    for (int s = 1; s < p; ++s) {
        const int to = detail::wrap(r + s, p), from = detail::wrap(r - s, p);
        comm.sendrecv(to, in + send_at[to], sendcounts[to] * elem_bytes, from,
                      out + recv_at[from], recvcounts[from] * elem_bytes);
    }
}

} // namespace dt::algo

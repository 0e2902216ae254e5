// SPDX-License-Identifier: Apache-2.0
// Pairwise-exchange alltoall: in step s (1..p-1) rank r sends its block for r+s and
// receives the block from r-s. Every step pairs each rank with one sender and one
// receiver, so no rank is flooded by all the others at once.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"

#include <cstring>

namespace dt::algo {

void alltoall_pairwise(Comm &comm, const void *sendbuf, void *recvbuf, size_t block_bytes)
{
    const int p = comm.size(), r = comm.rank();
    if (block_bytes == 0)
        return;
    auto *in = static_cast<const std::byte *>(sendbuf);
    auto *out = static_cast<std::byte *>(recvbuf);
    auto at = [&](int b) { return static_cast<size_t>(b) * block_bytes; };
    std::memcpy(out + at(r), in + at(r), block_bytes);
    for (int s = 1; s < p; ++s) {
        const int to = detail::wrap(r + s, p), from = detail::wrap(r - s, p);
        comm.sendrecv(to, in + at(to), block_bytes, from, out + at(from), block_bytes);
    }
}

} // namespace dt::algo

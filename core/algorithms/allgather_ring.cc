// SPDX-License-Identifier: Apache-2.0
// Ring allgather: in step s every rank forwards to its right the block it received from
// its left in step s-1 (its own block first), so after p-1 steps every rank has all p.
// All receives are posted up front (each lands in its own block of recvbuf), so a block
// is forwarded the moment it arrives.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"

#include <cstring>
#include <vector>

namespace dt::algo {

void allgather_ring(Comm &comm, const void *sendbuf, void *recvbuf, size_t block_bytes)
{
    const int p = comm.size(), r = comm.rank();
    auto *out = static_cast<std::byte *>(recvbuf);
    auto block = [&](int b) { return out + static_cast<size_t>(detail::wrap(b, p)) * block_bytes; };
    if (block_bytes == 0)
        return;
    if (sendbuf != block(r)) // otherwise in place
        std::memcpy(block(r), sendbuf, block_bytes);
    if (p == 1)
        return;
    const int left = detail::wrap(r - 1, p), right = detail::wrap(r + 1, p);

    std::vector<Request> recvs(static_cast<size_t>(p - 1));
    for (int s = 0; s < p - 1; ++s)
        recvs[s] = comm.irecv(left, block(r - s - 1), block_bytes);
    std::vector<Request> sends;
    sends.push_back(comm.isend(right, block(r), block_bytes));
    for (int s = 0; s < p - 1; ++s) {
        comm.wait(recvs[s]);
        if (s < p - 2)
            sends.push_back(comm.isend(right, block(r - s - 1), block_bytes));
    }
    for (auto &req : sends)
        comm.wait(req);
}

} // namespace dt::algo

// SPDX-License-Identifier: Apache-2.0
// Dissemination barrier: in round k every rank signals rank r + 2^k and waits for rank
// r - 2^k. After ceil(log2(p)) rounds each rank has heard, directly or through others,
// from every rank, so none leaves before all have entered. Works for any p.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"

namespace dt::algo {

void barrier_dissemination(Comm &comm)
{
    const int p = comm.size(), r = comm.rank();
    std::byte token{}, sink{};
    for (int d = 1; d < p; d <<= 1)
        comm.sendrecv(detail::wrap(r + d, p), &token, 0, detail::wrap(r - d, p), &sink, 0);
}

} // namespace dt::algo

// SPDX-License-Identifier: Apache-2.0
// Recursive doubling allreduce, the small-message algorithm: log2(p) exchanges of the
// whole vector (see allreduce_select.cc for where it wins).
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "reduce/reduce.h"

#include <cstring>
#include <memory>

namespace dt::algo {

// Recursive doubling: in step k every rank swaps its whole vector with rank ^ 2^k and
// reduces. Partners compute op(a, b) and op(b, a), which are bitwise equal for every
// op and dtype here, so all ranks end with identical bits. Beyond the largest power of
// two pof2 <= p, the first 2*(p - pof2) ranks fold pairwise as in halving-doubling: each
// even one hands its vector to the odd one above it and gets the result back at the end.
void allreduce_recursive_doubling(Comm &comm, const AllreduceArgs &args)
{
    const size_t es = detail::element_size(args.dtype, "allreduce");
    const size_t bytes = args.count * es;
    if (bytes == 0)
        return;
    auto *out = static_cast<std::byte *>(args.recvbuf);
    const int p = comm.size(), r = comm.rank();
    if (p == 1) {
        if (args.sendbuf != args.recvbuf)
            std::memcpy(out, args.sendbuf, bytes);
        return;
    }
    // This rank's vector so far: its input until the first reduction writes out, which
    // reads the input in place (no copy of sendbuf into recvbuf up front: at 64-256 KiB
    // that copy cost as much as a tenth of the call).
    const std::byte *mine = static_cast<const std::byte *>(args.sendbuf);
    const int pof2 = detail::largest_power_of_two(p);
    const int rem = p - pof2;
    if (r < 2 * rem && r % 2 == 0) { // folded in: the odd neighbour works for both
        comm.send(r + 1, mine, bytes);
        comm.recv(r + 1, out, bytes);
        return;
    }
    // Not zeroed: every byte is received before it is read (up to 2 MiB per call).
    auto scratch = std::make_unique_for_overwrite<std::byte[]>(bytes);
    std::byte *tmp = scratch.get();
    if (r < 2 * rem) {
        comm.recv(r - 1, tmp, bytes);
        reduce::reduce(out, mine, tmp, args.count, args.dtype, args.op);
        mine = out;
    }
    const int newrank = r < 2 * rem ? r / 2 : r - rem;
    auto real_rank = [&](int nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
    for (int mask = 1; mask < pof2; mask <<= 1) {
        const int peer = real_rank(newrank ^ mask);
        Request in = comm.irecv(peer, tmp, bytes);
        Request sent = comm.isend(peer, mine, bytes);
        comm.wait(in);
        comm.wait(sent); // out is about to change
        reduce::reduce(out, mine, tmp, args.count, args.dtype, args.op);
        mine = out;
    }
    if (args.op == DT_AVG)
        reduce::finish_average(out, args.count, args.dtype, p);
    if (r < 2 * rem)
        comm.send(r - 1, out, bytes);
}

} // namespace dt::algo

// SPDX-License-Identifier: Apache-2.0
// Recursive halving-doubling allreduce (Rabenseifner): a reduce-scatter by recursive
// halving, then an allgather by recursive doubling, over the largest power of two pof2
// <= p. The first 2*(p - pof2) ranks fold pairwise first: each even one hands its vector
// to the odd one above it, sits the main phase out and gets the result back at the end.
// log2(p) steps each way: few messages, which is what small allreduces need.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "reduce/reduce.h"

#include <cstring>
#include <utility>
#include <vector>

namespace dt::algo {

namespace {

using detail::part_offset;

// Exchange in which either direction may be empty: both sides compute both lengths, so
// they agree to skip a zero-byte message rather than send it.
void exchange(Comm &comm, int peer, const void *sendbuf, size_t send_len, void *recvbuf,
              size_t recv_len)
{
    Request r = recv_len > 0 ? comm.irecv(peer, recvbuf, recv_len) : nullptr;
    Request s = send_len > 0 ? comm.isend(peer, sendbuf, send_len) : nullptr;
    comm.wait(r);
    comm.wait(s);
}

} // namespace

void allreduce_halving_doubling(Comm &comm, const AllreduceArgs &args)
{
    const size_t es = detail::element_size(args.dtype, "allreduce");
    const size_t n = args.count;
    if (n == 0)
        return;
    auto *out = static_cast<std::byte *>(args.recvbuf);
    if (args.sendbuf != args.recvbuf)
        std::memcpy(out, args.sendbuf, n * es);
    const int p = comm.size(), r = comm.rank();
    if (p == 1)
        return;

    const int pof2 = detail::largest_power_of_two(p);
    const int rem = p - pof2;
    std::vector<std::byte> tmp(n * es);

    // Fold the extra ranks in: odd ranks below 2*rem take their even neighbour's vector.
    int newrank;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            comm.send(r + 1, out, n * es);
            newrank = -1;
        } else {
            comm.recv(r - 1, tmp.data(), n * es);
            reduce::reduce_into(out, tmp.data(), n, args.dtype, args.op);
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }

    if (newrank >= 0) {
        auto real_rank = [&](int nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
        auto off = [&](int part) { return part_offset(n, pof2, part) * es; };

        // Halving: keep one half of the current range of parts, send the other.
        int lo = 0, hi = pof2;
        std::vector<std::pair<int, int>> ranges;
        for (int mask = 1; mask < pof2; mask <<= 1) {
            const int peer = real_rank(newrank ^ mask);
            const int mid = (lo + hi) / 2;
            const bool keep_low = (newrank & mask) == 0;
            const int klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
            const int slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
            exchange(comm, peer, out + off(slo), off(shi) - off(slo), tmp.data() + off(klo),
                     off(khi) - off(klo));
            reduce::reduce_into(out + off(klo), tmp.data() + off(klo),
                                (off(khi) - off(klo)) / es, args.dtype, args.op);
            ranges.emplace_back(lo, hi);
            lo = klo;
            hi = khi;
        }
        if (args.op == DT_AVG)
            reduce::finish_average(out + off(lo), (off(hi) - off(lo)) / es, args.dtype, p);

        // Doubling: undo the halving steps in reverse, swapping finished halves.
        for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
            const int peer = real_rank(newrank ^ mask);
            auto [plo, phi] = ranges.back();
            ranges.pop_back();
            const int olo = lo == plo ? hi : plo, ohi = lo == plo ? phi : lo;
            exchange(comm, peer, out + off(lo), off(hi) - off(lo), out + off(olo),
                     off(ohi) - off(olo));
            lo = plo;
            hi = phi;
        }
    }

    // Hand the result back to the ranks that were folded in.
    if (r < 2 * rem) {
        if (r % 2 == 0)
            comm.recv(r + 1, out, n * es);
        else
            comm.send(r - 1, out, n * es);
    }
}

} // namespace dt::algo

// SPDX-License-Identifier: Apache-2.0
// allreduce(): picks the algorithm for one call. Recursive doubling exchanges the whole
// vector log2(p) times and wins while latency dominates; halving-doubling takes twice the
// steps but moves about half the data; the pipelined ring moves the least data per rank
// and wins once bandwidth does. DISTTRAIN_ALGORITHM forces one. (Ranks that share a host
// never get here for allreduce unless DISTTRAIN_SHM=0 or the algorithm is forced: the
// router, core/routing, sends them through core/shm first.)
#include "algorithms/allreduce_select.h"

#include "algorithms/algorithms.h"

namespace dt::algo {

namespace {

// Crossover in bytes between halving-doubling and ring over TCP loopback, 2 to 4 ranks
// (tests/bench/compare_allreduce.py with DISTTRAIN_SHM=0 and DISTTRAIN_ALGORITHM forced
// to each): below it the ring's 2(p-1) messages cost more than they save.
constexpr size_t kRingThresholdBytes = 64 * 1024;
// Up to this many bytes recursive doubling beats halving-doubling: one exchange instead
// of two on 2 ranks halved the time of 4 B - 32 KiB allreduces over TCP loopback (20 us
// -> 10 us, Open MPI's figure; compare_allreduce.py --rt). With more ranks it sends the
// whole vector log2(p) times, so there it stays a small-message algorithm.
constexpr size_t kRecursiveDoublingMaxBytes = 32 * 1024;
// On 2 ranks recursive doubling sends exactly what the ring sends (the whole vector
// each way), in one exchange instead of two pipelined steps: over TCP loopback it beat
// the ring up to 512 KiB (64 KiB 27 -> 23 us, 128 KiB 48 -> 37 us) and lost from 1 MiB
// while it copied sendbuf to recvbuf first; reading sendbuf in place, it beat the ring
// up to 2 MiB and lost at 4 MiB (compare_allreduce.py -n 2000, busbw against
// Open MPI: 512 KiB 1.13 -> 1.35x, 1 MiB 1.02 -> 1.31x, 2 MiB 1.51 -> 1.77x, 4 MiB
// 1.80 -> 1.63x).
constexpr size_t kRecursiveDoublingMaxBytesTwoRanks = 2 * 1024 * 1024;

} // namespace

AllreduceChoice select_allreduce(AllreduceChoice forced, int size, size_t bytes) noexcept
{
    if (forced != AllreduceChoice::automatic && forced != AllreduceChoice::shm)
        return forced;
    const size_t rd_max = size == 2 ? kRecursiveDoublingMaxBytesTwoRanks
                                    : kRecursiveDoublingMaxBytes;
    return bytes <= rd_max                ? AllreduceChoice::recursive_doubling
           : bytes < kRingThresholdBytes ? AllreduceChoice::halving_doubling
                                         : AllreduceChoice::ring;
}

void allreduce(Comm &comm, const AllreduceArgs &args, AllreduceChoice forced)
{
    const size_t bytes = args.count * dt_dtype_size(args.dtype);
    switch (select_allreduce(forced, comm.size(), bytes)) {
    case AllreduceChoice::ring: allreduce_ring(comm, args); return;
    case AllreduceChoice::recursive_doubling: allreduce_recursive_doubling(comm, args); return;
    default: allreduce_halving_doubling(comm, args); return;
    }
}

} // namespace dt::algo

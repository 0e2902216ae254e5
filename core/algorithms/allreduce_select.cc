// allreduce(): picks the algorithm for one call. Recursive doubling exchanges the whole
// vector log2(p) times and wins while latency dominates; halving-doubling takes twice the
// steps but moves about half the data; the pipelined ring moves the least data per rank
// and wins once bandwidth does. DISTTRAIN_ALGORITHM forces one. (Ranks that share a host
// never get here for allreduce unless DISTTRAIN_SHM=0 or the algorithm is forced:
// run_collective sends them through core/shm first.)
//
// Recursive doubling lives here, not in a file of its own as the other algorithms do,
// only because this file is where it was added; it is small and used for small vectors.
#include "algorithms/allreduce_select.h"

#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "reduce/reduce.h"
#include "runtime/env.h"
#include "runtime/error.h"

#include <cstring>
#include <memory>

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
// the ring up to 512 KiB (64 KiB 27 -> 23 us, 128 KiB 48 -> 37 us) and lost from 1 MiB.
constexpr size_t kRecursiveDoublingMaxBytesTwoRanks = 256 * 1024;

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
    if (args.sendbuf != args.recvbuf)
        std::memcpy(out, args.sendbuf, bytes);
    const int p = comm.size(), r = comm.rank();
    if (p == 1)
        return;
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    const int rem = p - pof2;
    if (r < 2 * rem && r % 2 == 0) { // folded in: the odd neighbour works for both
        comm.send(r + 1, out, bytes);
        comm.recv(r + 1, out, bytes);
        return;
    }
    // Not zeroed: every byte is received before it is read (up to 256 KiB per call).
    auto scratch = std::make_unique_for_overwrite<std::byte[]>(bytes);
    std::byte *tmp = scratch.get();
    if (r < 2 * rem) {
        comm.recv(r - 1, tmp, bytes);
        reduce::reduce_into(out, tmp, args.count, args.dtype, args.op);
    }
    const int newrank = r < 2 * rem ? r / 2 : r - rem;
    auto real_rank = [&](int nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
    for (int mask = 1; mask < pof2; mask <<= 1) {
        const int peer = real_rank(newrank ^ mask);
        Request in = comm.irecv(peer, tmp, bytes);
        Request sent = comm.isend(peer, out, bytes);
        comm.wait(in);
        comm.wait(sent); // out is about to change
        reduce::reduce_into(out, tmp, args.count, args.dtype, args.op);
    }
    if (args.op == DT_AVG)
        reduce::finish_average(out, args.count, args.dtype, p);
    if (r < 2 * rem)
        comm.send(r - 1, out, bytes);
}

} // namespace

AllreduceChoice allreduce_choice()
{
    auto value = env::get("DISTTRAIN_ALGORITHM");
    if (!value || *value == "auto")
        return AllreduceChoice::automatic;
    if (*value == "ring")
        return AllreduceChoice::ring;
    if (*value == "halving_doubling")
        return AllreduceChoice::halving_doubling;
    if (*value == "shm")
        return AllreduceChoice::shm;
    if (*value == "recursive_doubling")
        return AllreduceChoice::recursive_doubling;
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ALGORITHM='", *value,
                "' is not an allreduce algorithm; expected ring, halving_doubling, "
                "recursive_doubling, shm or auto");
}

void allreduce(Comm &comm, const AllreduceArgs &args)
{
    AllreduceChoice choice = allreduce_choice();
    if (choice == AllreduceChoice::automatic || choice == AllreduceChoice::shm) {
        size_t bytes = args.count * dt_dtype_size(args.dtype);
        size_t rd_max = comm.size() == 2 ? kRecursiveDoublingMaxBytesTwoRanks
                                         : kRecursiveDoublingMaxBytes;
        choice = bytes <= rd_max                ? AllreduceChoice::recursive_doubling
                 : bytes < kRingThresholdBytes ? AllreduceChoice::halving_doubling
                                               : AllreduceChoice::ring;
    }
    if (choice == AllreduceChoice::ring)
        allreduce_ring(comm, args);
    else if (choice == AllreduceChoice::recursive_doubling)
        allreduce_recursive_doubling(comm, args);
    else
        allreduce_halving_doubling(comm, args);
}

} // namespace dt::algo

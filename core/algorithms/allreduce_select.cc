// allreduce(): picks the algorithm for one call. Halving-doubling sends log2(p) messages
// per rank and wins while latency dominates; the pipelined ring moves the least data per
// rank and wins once bandwidth does. DISTTRAIN_ALGORITHM forces one. (Ranks that share a
// host never get here for allreduce unless DISTTRAIN_SHM=0 or the algorithm is forced:
// run_collective sends them through core/shm first.)
#include "algorithms/allreduce_select.h"

#include "algorithms/algorithms.h"
#include "runtime/env.h"
#include "runtime/error.h"

namespace dt::algo {

namespace {

// Crossover in bytes between halving-doubling and ring over TCP loopback, 2 to 4 ranks
// (tests/bench/compare_allreduce.py with DISTTRAIN_SHM=0 and DISTTRAIN_ALGORITHM forced
// to each): below it the ring's 2(p-1) messages cost more than they save.
constexpr size_t kRingThresholdBytes = 64 * 1024;

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
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ALGORITHM='", *value,
                "' is not an allreduce algorithm; expected ring, halving_doubling, shm or auto");
}

void allreduce(Comm &comm, const AllreduceArgs &args)
{
    AllreduceChoice choice = allreduce_choice();
    if (choice == AllreduceChoice::automatic || choice == AllreduceChoice::shm) {
        size_t bytes = args.count * dt_dtype_size(args.dtype);
        choice = bytes < kRingThresholdBytes ? AllreduceChoice::halving_doubling
                                             : AllreduceChoice::ring;
    }
    if (choice == AllreduceChoice::ring)
        allreduce_ring(comm, args);
    else
        allreduce_halving_doubling(comm, args);
}

} // namespace dt::algo

// allreduce(): picks the algorithm for one call. Halving-doubling sends log2(p) messages
// per rank and wins while latency dominates; the pipelined ring moves the least data per
// rank and wins once bandwidth does. DISTTRAIN_ALGORITHM forces one.
#include "algorithms/algorithms.h"
#include "runtime/env.h"
#include "runtime/error.h"

namespace dt::algo {

namespace {

// Crossover in bytes between halving-doubling and ring. A starting point, to be
// re-measured on loopback and real networks.
constexpr size_t kRingThresholdBytes = 64 * 1024;

enum class Choice { automatic, ring, halving_doubling };

Choice read_choice()
{
    auto value = env::get("DISTTRAIN_ALGORITHM");
    if (!value || *value == "auto")
        return Choice::automatic;
    if (*value == "ring")
        return Choice::ring;
    if (*value == "halving_doubling")
        return Choice::halving_doubling;
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ALGORITHM='", *value,
                "' is not an allreduce algorithm; expected ring, halving_doubling or auto");
}

} // namespace

void allreduce(Comm &comm, const AllreduceArgs &args)
{
    Choice choice = read_choice();
    if (choice == Choice::automatic) {
        size_t bytes = args.count * dt_dtype_size(args.dtype);
        choice = bytes < kRingThresholdBytes ? Choice::halving_doubling : Choice::ring;
    }
    if (choice == Choice::ring)
        allreduce_ring(comm, args);
    else
        allreduce_halving_doubling(comm, args);
}

} // namespace dt::algo

// DISTTRAIN_ALGORITHM: forces one allreduce algorithm, for measurement. "shm" forces the
// shared-memory path where the members share a host (hierarchical across hosts) and is
// "auto" elsewhere; "ring", "halving_doubling" and "recursive_doubling" keep allreduce
// off shared memory.
#pragma once

namespace dt::algo {

enum class AllreduceChoice { automatic, ring, halving_doubling, shm, recursive_doubling };

// Reads DISTTRAIN_ALGORITHM (unset or "auto": automatic). Throws DT_ERR_INVALID_CONFIG
// naming the value and the choices.
AllreduceChoice allreduce_choice();

} // namespace dt::algo

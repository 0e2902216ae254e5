// Runs one collective on this rank with the core's algorithms over the transport's
// point-to-point operations. Throws dt::Error on failure.
#pragma once

#include "algorithms/comm.h"
#include "runtime/operation.h"

namespace dt {

void execute(Transport &transport, const OpDesc &op, int rank, int size, uint64_t tag,
             algo::Clock::time_point deadline);

} // namespace dt

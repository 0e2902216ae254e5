// A transport's native collectives (MPI, NCCL): the engine offers each collective to the
// plugin first and runs the core's algorithms when it has none or declines the call.
#pragma once

#include "algorithms/comm.h"
#include "runtime/operation.h"

namespace dt {

// Runs op with the transport's native collective and waits for it through comm (its
// deadline, cancel flag and failure policy: a failure aborts the transport and throws
// dt::Error). Returns false, having started nothing, when the core must run its own
// algorithm instead: the plugin has no such member, op is not over the whole job
// (native collectives span every rank), or the plugin answered DTP_ERR_UNSUPPORTED for
// this call. DT_AVG is run as a native sum divided by avg_divisor here, so that ranks
// that joined early are not counted.
bool run_native(algo::Comm &comm, const OpDesc &op, int avg_divisor);

} // namespace dt

// Runs one collective on this rank with the core's algorithms over the transport's
// point-to-point operations. Throws dt::Error on failure.
#pragma once

#include "algorithms/comm.h"
#include "runtime/operation.h"

namespace dt {

// avg_divisor: what DT_AVG divides the sum by (the number of ranks that contributed).
void run_collective(algo::Comm &comm, const OpDesc &op, int avg_divisor);

// Fills buf with the identity of op (0 for sum, 1 for prod, +max for min, lowest for max):
// what a rank that has joined contributes.
void fill_identity(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op);

} // namespace dt

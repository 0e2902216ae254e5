/* SPDX-License-Identifier: Apache-2.0 */
// The identity of a reduction: what a rank that has joined contributes, so that the
// others' result is unchanged.
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>

namespace dt {

// Fills buf with the identity of op (0 for sum, 1 for prod, +max for min, lowest for max).
void fill_identity(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op);

} // namespace dt

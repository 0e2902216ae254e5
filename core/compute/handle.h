/* SPDX-License-Identifier: Apache-2.0 */
// The definition behind dt_compute_h, and the shims' common lookup.
#pragma once

#include "capi/guard.h"
#include "compute/compute_context.h"
#include "compute/tensor_check.h"

#include <disttrain/compute.h>

struct dt_compute {
    std::unique_ptr<dt::compute::ComputeContext> impl;
};

namespace dt::compute {

// The context behind a handle; throws DT_ERR_INVALID_ARGUMENT for NULL.
inline ComputeContext &context(dt_compute_h compute, const char *function)
{
    require_ptr(function, "compute", compute);
    return *compute->impl;
}

} // namespace dt::compute

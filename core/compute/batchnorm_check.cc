// SPDX-License-Identifier: Apache-2.0
#include "compute/batchnorm_check.h"

#include "runtime/error.h"

#include <cmath>

namespace dt::compute {

dtp_tensor_t bn_input(const char *function, const dt_tensor_desc_t *x_desc)
{
    dtp_tensor_t t = tensor(function, "x_desc", x_desc);
    require_ndims(function, "x_desc", t, 2, 4);
    return t;
}

void require_epsilon(const char *function, float epsilon)
{
    if (!(epsilon > 0.0f) || !std::isfinite(epsilon))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": epsilon = ", epsilon, " must be > 0");
}

void require_running(const char *function, float momentum, const float *running_mean,
                     const float *running_var)
{
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": momentum = ", momentum,
                    " must be in [0, 1]");
    if ((running_mean == nullptr) != (running_var == nullptr))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": pass both running_mean and "
                    "running_var, or neither");
}

} // namespace dt::compute

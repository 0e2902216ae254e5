// SPDX-License-Identifier: Apache-2.0
#include "compute/batchnorm_check.h"

#include "runtime/error.h"

#include <cmath>
#include <initializer_list>
#include <utility>

namespace dt::compute {

namespace {

using Named = std::pair<const char *, const void *>;

dtp_tensor_t bn_input(const char *function, const dt_tensor_desc_t *x_desc, float epsilon,
                      std::initializer_list<Named> pointers)
{
    dtp_tensor_t t = tensor(function, "x_desc", x_desc);
    require_ndims(function, "x_desc", t, 2, 4);
    if (!(epsilon > 0.0f) || !std::isfinite(epsilon))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": epsilon = ", epsilon, " must be > 0");
    for (auto [what, p] : pointers)
        require_ptr(function, what, p);
    return t;
}

} // namespace

dtp_tensor_t check_bn_training(const char *function, const dt_tensor_desc_t *x_desc,
                               const void *x, const float *scale, const float *shift,
                               float epsilon, float momentum, const void *y,
                               const float *save_mean, const float *save_invstd,
                               const float *running_mean, const float *running_var)
{
    dtp_tensor_t t = bn_input(function, x_desc, epsilon,
                              {{"x", x}, {"scale", scale}, {"shift", shift}, {"y", y},
                               {"save_mean", save_mean}, {"save_invstd", save_invstd}});
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": momentum = ", momentum,
                    " must be in [0, 1]");
    if ((running_mean == nullptr) != (running_var == nullptr))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": pass both running_mean and "
                    "running_var, or neither");
    return t;
}

dtp_tensor_t check_bn_inference(const char *function, const dt_tensor_desc_t *x_desc,
                                const void *x, const float *scale, const float *shift,
                                const float *running_mean, const float *running_var,
                                float epsilon, const void *y)
{
    return bn_input(function, x_desc, epsilon,
                    {{"x", x}, {"scale", scale}, {"shift", shift},
                     {"running_mean", running_mean}, {"running_var", running_var}, {"y", y}});
}

dtp_tensor_t check_bn_backward(const char *function, const dt_tensor_desc_t *x_desc,
                               const void *x, const void *dy, const float *scale,
                               const float *save_mean, const float *save_invstd,
                               float epsilon, const void *dx, const float *dscale,
                               const float *dshift)
{
    return bn_input(function, x_desc, epsilon,
                    {{"x", x}, {"dy", dy}, {"scale", scale}, {"save_mean", save_mean},
                     {"save_invstd", save_invstd}, {"dx", dx}, {"dscale", dscale},
                     {"dshift", dshift}});
}

} // namespace dt::compute

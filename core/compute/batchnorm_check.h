/* SPDX-License-Identifier: Apache-2.0 */
// Argument checks shared by the batch normalisation functions, plain and fused with
// ReLU, so both refuse the same input with the same words. Each returns x_desc checked
// and converted.
#pragma once

#include "compute/tensor_check.h"

namespace dt::compute {

// Training forward: x_desc (2 or 4 dims, channels on dimension 1), epsilon > 0,
// momentum in [0, 1], running_mean and running_var both given or both NULL, and every
// other pointer given.
dtp_tensor_t check_bn_training(const char *function, const dt_tensor_desc_t *x_desc,
                               const void *x, const float *scale, const float *shift,
                               float epsilon, float momentum, const void *y,
                               const float *save_mean, const float *save_invstd,
                               const float *running_mean, const float *running_var);

// Inference forward: x_desc, epsilon, and every pointer given.
dtp_tensor_t check_bn_inference(const char *function, const dt_tensor_desc_t *x_desc,
                                const void *x, const float *scale, const float *shift,
                                const float *running_mean, const float *running_var,
                                float epsilon, const void *y);

// Backward: x_desc, epsilon, and every pointer given.
dtp_tensor_t check_bn_backward(const char *function, const dt_tensor_desc_t *x_desc,
                               const void *x, const void *dy, const float *scale,
                               const float *save_mean, const float *save_invstd,
                               float epsilon, const void *dx, const float *dscale,
                               const float *dshift);

} // namespace dt::compute

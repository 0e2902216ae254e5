/* SPDX-License-Identifier: Apache-2.0 */
// Argument checks shared by the batch normalisation functions, plain and fused with
// ReLU, so both refuse the same input with the same words.
#pragma once

#include "compute/tensor_check.h"

namespace dt::compute {

// x_desc checked and converted: 2 or 4 dims (per channel: dimension 1).
dtp_tensor_t bn_input(const char *function, const dt_tensor_desc_t *x_desc);
void require_epsilon(const char *function, float epsilon);
// momentum in [0, 1]; running_mean and running_var both given or both NULL.
void require_running(const char *function, float momentum, const float *running_mean,
                     const float *running_var);

} // namespace dt::compute

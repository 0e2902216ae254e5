/* SPDX-License-Identifier: Apache-2.0 */
// Argument checks shared by every dt_compute_* shim, so that each plugin can trust its
// inputs and every plugin reports a wrong shape with the same message. Each throws
// DT_ERR_INVALID_ARGUMENT "<function>: <what> ..." naming the argument and the fix.
#pragma once

#include <disttrain/compute.h>
#include <disttrain/plugin/compute.h>

#include <string>

namespace dt::compute {

// "(2, 3, 28, 28) float32".
std::string describe(const dtp_tensor_t &t);

// Number of elements.
int64_t elements(const dtp_tensor_t &t);

// Checks a descriptor (known floating dtype, 1 to 4 dims, each > 0) and converts it.
// `what` names it in messages ("x_desc").
dtp_tensor_t tensor(const char *function, const char *what, const dt_tensor_desc_t *desc);

// As tensor(), for the dtypes fill accepts (floating types and int32).
dtp_tensor_t fill_tensor(const char *function, const char *what, const dt_tensor_desc_t *desc);

// Throws unless `t` has exactly `ndims` dims (or, with alt_ndims >= 0, either count).
void require_ndims(const char *function, const char *what, const dtp_tensor_t &t, int ndims,
                   int alt_ndims = -1);

// Throws unless b has a's dtype and dims.
void require_same(const char *function, const char *a_what, const dtp_tensor_t &a,
                  const char *b_what, const dtp_tensor_t &b);

// Throws unless t's dtype is float32 (per-channel vectors, optimizer state, logits).
void require_f32(const char *function, const char *what, const dtp_tensor_t &t);

// Throws unless t is the float32 per-channel vector of `channels` elements.
void require_channels(const char *function, const char *what, const dtp_tensor_t &t,
                      int64_t channels);

// Throws DT_ERR_INVALID_ARGUMENT "<function>: <what> must not be NULL".
void require_ptr(const char *function, const char *what, const void *p);

// The convolution geometry with defaults applied and each value checked, and the output
// shape it gives for x and w (throws when they do not fit together).
dtp_conv_t conv_geometry(const char *function, const dt_conv_params_t *p);
// w's dtype is x's, or float32 with bfloat16 x (float32 weights, bfloat16 activations);
// x_what and w_what name them in messages.
dtp_tensor_t conv_output(const char *function, const dtp_conv_t &g, const dtp_tensor_t &x,
                         const dtp_tensor_t &w, const char *x_what = "x_desc",
                         const char *w_what = "w_desc");

// The pooling geometry with defaults applied, and the output shape it gives for x.
dtp_pool_t pool_geometry(const char *function, const dt_pool_params_t *p);
dtp_tensor_t pool_output(const char *function, const dtp_pool_t &g, const dtp_tensor_t &x);

// A 4-D activation of convolution or pooling, checked like tensor() and given to plugins
// in NCHW order whatever its memory order: with DTP_LAYOUT_NHWC the caller describes it
// (N, H, W, C), and the dims are permuted to (N, C, H, W).
dtp_tensor_t activation(const char *function, const char *what, const dt_tensor_desc_t *desc,
                        int32_t layout);

// Throws "<function>: <what> is <actual> but <why> needs <expected>" unless equal.
void require_shape(const char *function, const char *what, const dtp_tensor_t &actual,
                   const dtp_tensor_t &expected, const std::string &why);

} // namespace dt::compute

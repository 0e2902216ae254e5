/* SPDX-License-Identifier: Apache-2.0 */
// 1x1 convolutions without padding on channels-last float32 activations, as matrix
// products over the whole batch: the (N * H * W, C) activations times the (O, C) weights.
// A strided one first gathers the rows it reads (forward, weight gradient) or scatters
// the rows it writes (data gradient) through a scratch of the instance's. resnet50's 1x1
// convolutions (half its FLOPs) ran 1.5-2x slower in oneDNN's direct kernels, stride 2
// included (its projections); dnnl_sgemm runs at the core's float32 limit.
#pragma once

#include "onednn_context.h"

namespace dtp::onednn {

// Whether the convolution runs here: float32, 1x1, unpadded, ungrouped, channels-last.
bool nhwc_gemm(const Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w, int32_t dtype);

// The three directions (shapes as compute.h describes them: dims in NCHW order).
void gemm_conv_forward(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &x_desc,
                       const float *x, const dtp_tensor_t &w_desc, const float *w,
                       const float *bias, const dtp_tensor_t &y_desc, float *y);
void gemm_conv_backward_data(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w_desc,
                             const float *w, const dtp_tensor_t &dy_desc, const float *dy,
                             const dtp_tensor_t &dx_desc, float *dx);
void gemm_conv_backward_weights(Instance &in, const dtp_conv_t &p,
                                const dtp_tensor_t &x_desc, const float *x,
                                const dtp_tensor_t &dy_desc, const float *dy,
                                const dtp_tensor_t &dw_desc, float *dw, float *dbias);

} // namespace dtp::onednn

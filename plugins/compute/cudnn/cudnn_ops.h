/* SPDX-License-Identifier: Apache-2.0 */
// The dt_compute_v1_t members implemented in cudnn_dnn.cc (the cuDNN / cuBLAS calls).
#pragma once

#include <disttrain/plugin/compute.h>

namespace dtp::cudnn {

int32_t matmul(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a, int32_t trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const void *a, const void *b,
               float beta, void *out);
int32_t bias_backward(void *c, const dtp_tensor_t *dy_desc, const void *dy, float *dbias);
int32_t conv_forward(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *w_desc, const void *w, const float *bias,
                     const dtp_tensor_t *y_desc, void *y);
int32_t conv_backward_data(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                           const void *w, const dtp_tensor_t *dy_desc, const void *dy,
                           const dtp_tensor_t *dx_desc, void *dx);
int32_t conv_backward_weights(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                              const void *x, const dtp_tensor_t *dy_desc, const void *dy,
                              const dtp_tensor_t *dw_desc, void *dw, float *dbias);
int32_t pool_workspace_size(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                            const dtp_tensor_t *y_desc, size_t *bytes);
int32_t pool_forward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *y_desc, void *y, void *workspace);
int32_t pool_backward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                      const dtp_tensor_t *y_desc, const void *y, const void *dy, void *dx,
                      const void *workspace);
int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean,
                                   float *save_invstd, float *running_mean, float *running_var);
int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y);
int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale, const float *save_mean, const float *save_invstd,
                           float epsilon, void *dx, float *dscale, float *dshift);
int32_t batchnorm_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                        const float *scale, const float *shift,
                                        float epsilon, float momentum, void *y,
                                        float *save_mean, float *save_invstd,
                                        float *running_mean, float *running_var);
int32_t batchnorm_relu_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                         const float *scale, const float *shift,
                                         const float *running_mean, const float *running_var,
                                         float epsilon, void *y);
int32_t batchnorm_add_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                            const void *z, const float *scale,
                                            const float *shift, float epsilon, float momentum,
                                            void *y, float *save_mean, float *save_invstd,
                                            float *running_mean, float *running_var);
int32_t batchnorm_add_relu_forward_inference(void *c, const dtp_tensor_t *x_desc,
                                             const void *x, const void *z, const float *scale,
                                             const float *shift, const float *running_mean,
                                             const float *running_var, float epsilon, void *y);
int32_t batchnorm_relu_backward(void *c, const dtp_tensor_t *x_desc, const void *x,
                                const void *y, const void *dy, const float *scale,
                                const float *save_mean, const float *save_invstd,
                                float epsilon, void *dx, float *dscale, float *dshift);

} // namespace dtp::cudnn

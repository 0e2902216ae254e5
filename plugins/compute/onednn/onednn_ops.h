/* SPDX-License-Identifier: Apache-2.0 */
// The ops of dt_compute_v1_t that the oneDNN plugin implements, one group per file.
#pragma once

#include <disttrain/plugin/compute.h>

namespace dtp::onednn {

// onednn_memory.cc
int32_t alloc(void *c, size_t bytes, void **out);
int32_t free_memory(void *c, void *ptr);
int32_t copy(void *c, void *dst, const void *src, size_t bytes, int32_t kind);
int32_t fill(void *c, const dtp_tensor_t *x_desc, void *x, float value);
int32_t cast(void *c, const dtp_tensor_t *src_desc, const void *src, int32_t dst_dtype,
             void *dst);

// onednn_matmul.cc
int32_t matmul(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a, int32_t trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const void *a, const void *b,
               float beta, void *out);

// onednn_elementwise.cc
int32_t add(void *c, const dtp_tensor_t *desc, const void *a, const void *b, void *out);
int32_t add_relu(void *c, const dtp_tensor_t *desc, const void *a, const void *b, void *out);
int32_t relu_backward_sum(void *c, const dtp_tensor_t *desc, const void *y, const void *a,
                          const void *b, void *dx);
int32_t axpby(void *c, const dtp_tensor_t *desc, float alpha, const void *x, float beta,
              void *y);
int32_t scale(void *c, const dtp_tensor_t *desc, float alpha, void *x);
int32_t bias_add(void *c, const dtp_tensor_t *y_desc, void *y, const float *bias);
int32_t bias_backward(void *c, const dtp_tensor_t *dy_desc, const void *dy, float *dbias);
int32_t relu_forward(void *c, const dtp_tensor_t *desc, const void *x, void *y);
int32_t relu_backward(void *c, const dtp_tensor_t *desc, const void *x, const void *dy,
                      void *dx);

// onednn_conv.cc
int32_t conv_forward(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *w_desc, const void *w, const float *bias,
                     const dtp_tensor_t *y_desc, void *y);
int32_t conv_backward_data(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                           const void *w, const dtp_tensor_t *dy_desc, const void *dy,
                           const dtp_tensor_t *dx_desc, void *dx);
int32_t conv_backward_weights(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                              const void *x, const dtp_tensor_t *dy_desc, const void *dy,
                              const dtp_tensor_t *dw_desc, void *dw, float *dbias);

// onednn_pool.cc
int32_t pool_workspace_size(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                            const dtp_tensor_t *y_desc, size_t *bytes);
int32_t pool_forward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *y_desc, void *y, void *workspace);
int32_t pool_backward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                      const dtp_tensor_t *y_desc, const void *y, const void *dy, void *dx,
                      const void *workspace);

// onednn_batchnorm.cc
int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean,
                                   float *save_invstd, float *running_mean,
                                   float *running_var);
int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y);
int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale, const float *save_mean,
                           const float *save_invstd, float epsilon, void *dx, float *dscale,
                           float *dshift);
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

// onednn_loss.cc
int32_t softmax_xent_forward(void *c, const dtp_tensor_t *logits_desc, const void *logits,
                             const int32_t *labels, void *probs, float *loss,
                             int64_t *correct);
int32_t softmax_xent_backward(void *c, const dtp_tensor_t *probs_desc, const void *probs,
                              const int32_t *labels, float scale, void *dlogits);

// onednn_optimizer.cc
int32_t sgd_update(void *c, const dtp_sgd_t *p, size_t count, float *w, const float *grad,
                   float *momentum_buf);
int32_t adam_update(void *c, const dtp_adam_t *p, size_t count, float *w, const float *grad,
                    float *m, float *v);

} // namespace dtp::onednn

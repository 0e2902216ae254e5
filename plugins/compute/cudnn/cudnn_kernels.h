/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA kernels of the cuDNN plugin (cudnn_kernels.cu): the element-wise work that
// cuDNN and cuBLAS have no single call for. Each launches on `stream` and returns the
// launch's cudaError_t as an int (0: queued).
#pragma once

#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace dtp::cudnn {

using stream_t = CUstream_st *;

// dtype values are DTP_FLOAT32, DTP_FLOAT16, DTP_BFLOAT16 (and DTP_INT32 for fill).
int launch_fill(stream_t s, int dtype, int64_t n, void *x, float value);
int launch_cast(stream_t s, int src_dtype, int dst_dtype, int64_t n, const void *src, void *dst);
int launch_add(stream_t s, int dtype, int64_t n, const void *a, const void *b, void *c);
// c = max(a + b, 0) in one pass: the add kernel's sum, then the ReLU kernel's fmaxf.
int launch_add_relu(stream_t s, int dtype, int64_t n, const void *a, const void *b, void *c);
int launch_axpby(stream_t s, int dtype, int64_t n, float alpha, const void *x, float beta,
                 void *y);
int launch_bias_add(stream_t s, int dtype, int64_t rows, int64_t ch, int64_t spatial, void *y,
                    const float *bias);
// A filter of k outputs, c inputs and rs = R * S taps, converted from src_dtype to
// dst_dtype and moved from (K, C, R, S) to (K, R, S, C), back, or kept in place.
enum class FilterMove { keep, to_channels_last, from_channels_last };
int launch_filter_convert(stream_t s, int src_dtype, int dst_dtype, int64_t k, int64_t c,
                          int64_t rs, const void *src, void *dst, FilterMove move);
int launch_relu(stream_t s, int dtype, int64_t n, const void *x, void *y);
int launch_relu_backward(stream_t s, int dtype, int64_t n, const void *x, const void *dy,
                         void *dx);
// dx = a + b where y > 0, else 0, in one pass: the add kernel's sum, then the ReLU
// gradient kernel's test.
int launch_relu_backward_sum(stream_t s, int dtype, int64_t n, const void *y, const void *a,
                             const void *b, void *dx);
// probs = softmax(logits) per row; row_loss[r] = -log p[label]; row_hit[r] = argmax == label;
// bad_label[0] is set to 1 when a label is out of range.
int launch_softmax_xent(stream_t s, int64_t rows, int64_t k, const float *logits,
                        const int32_t *labels, float *probs, float *row_loss, int32_t *row_hit,
                        int32_t *bad_label);
int launch_softmax_xent_backward(stream_t s, int64_t rows, int64_t k, const float *probs,
                                 const int32_t *labels, float scale, float *dlogits);
int launch_sgd(stream_t s, int64_t n, float lr, float momentum, float wd, int nesterov, float *w,
               const float *g, float *buf);
int launch_adam(stream_t s, int64_t n, float lr, float b1, float b2, float eps, float wd,
                int decoupled, float c1, float root_c2, float *w, const float *g, float *m,
                float *v);

} // namespace dtp::cudnn

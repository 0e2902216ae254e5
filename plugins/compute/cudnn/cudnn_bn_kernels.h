/* SPDX-License-Identifier: Apache-2.0 */
// The cuDNN plugin's own batch normalisation kernels (cudnn_bn_kernels.cu), used instead
// of cuDNN's where cudnn_batchnorm.cc chooses them: on the (rows, C) view of channels-last
// activations, where cuDNN's kernels read each channel with a stride of C elements, and on
// bfloat16 activations, which cuDNN may refuse (PyTorch does not ask it for them either).
// Semantics are compute.h's: the batch's mean and biased variance, save_invstd =
// 1 / sqrt(var + epsilon), running statistics updated as PyTorch does (unbiased
// variance), dx, dscale and dshift overwritten. Activations are float32, float16 or
// bfloat16; scale, shift and statistics float32; all arithmetic in float32, totals in
// double.
//
// Each function queues its kernels on `stream` and returns the first launch error as an
// int (0: queued); nothing waits for the GPU.
#pragma once

#include "cudnn_kernels.h"

#include <cstddef>
#include <cstdint>

namespace dtp::cudnn {

// What a channel is made of: `n` planes of `spatial` contiguous elements, a plane of each
// of the `channels` channels in turn: (N, C, H, W) with spatial = H * W. spatial == 1 is
// (rows, C), rows = n: channels-last activations seen as (N * H * W, C), (N, C) and
// (N, C, 1, 1) alike.
struct BnShape {
    int dtype;
    int64_t n, channels, spatial;
};

// Where and how the kernels run: the stream, the device's multiprocessor count (it sizes
// the grids) and scratch device memory of at least bn_scratch_bytes(shape, sms) bytes,
// 16-byte aligned, that nothing else uses until the kernels are done (partial sums and
// per-channel coefficients).
struct BnLaunch {
    stream_t stream;
    int sms;
    void *scratch;
};

size_t bn_scratch_bytes(const BnShape &shape, int sms);

// relu: ReLU fused, y = max(0, batch norm of x), as the ReLU kernel gives it from y.
// z (NULL: none): a shortcut of x's shape added before the ReLU (relu is then implied),
// y = max(0, batch norm of x + z), as the add_relu kernel gives it from the batch norm.
int launch_bn_forward_training(const BnLaunch &l, const BnShape &shape, const void *x,
                               const void *z, const float *scale, const float *shift,
                               float epsilon, float momentum, void *y, float *save_mean,
                               float *save_invstd, float *running_mean, float *running_var,
                               bool relu);
int launch_bn_forward_inference(const BnLaunch &l, const BnShape &shape, const void *x,
                                const void *z, const float *scale, const float *shift,
                                const float *running_mean, const float *running_var,
                                float epsilon, void *y, bool relu);
// relu_y: the output of the forward with ReLU fused, whose sign masks dy (dy where
// relu_y > 0, else 0, as the ReLU backward kernel gives it); NULL: dy as it is.
int launch_bn_backward(const BnLaunch &l, const BnShape &shape, const void *x, const void *dy,
                       const void *relu_y, const float *scale, const float *save_mean,
                       const float *save_invstd, void *dx, float *dscale, float *dshift);

} // namespace dtp::cudnn

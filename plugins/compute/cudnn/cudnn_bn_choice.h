/* SPDX-License-Identifier: Apache-2.0 */
// Which batch normalisation the cuDNN plugin runs (DISTTRAIN_CUDNN_BATCHNORM): cuDNN's or
// its own kernels (cudnn_bn_kernels.h). No CUDA here, so that a test without a GPU can
// check the setting and the choice.
#pragma once

#include <cstdint>

namespace dtp::cudnn {

enum class BatchnormKernels {
    automatic, // own kernels, cuDNN for 4-D float16 (not measured)
    native,    // always the plugin's own kernels
    cudnn,     // always cuDNN (bfloat16 through float32 copies where it refuses bfloat16)
};

// The setting from DISTTRAIN_CUDNN_BATCHNORM's value (NULL or empty: automatic). Any other
// value throws std::invalid_argument naming the variable and the accepted values.
BatchnormKernels batchnorm_kernels_setting(const char *value);

// Whether batch norm of a tensor of this dtype (DTP_*) and rank runs on the plugin's own
// kernels under setting k. Rank 2 is the (rows, C) view of channels-last activations,
// where cuDNN's kernels read each channel with a stride of C elements (145-572 images/s
// against 1693 for NCHW, ResNet-50 on an H100); bfloat16 is what cuDNN refuses; on NCHW
// float32 the own kernels with their fused ReLU made ResNet-50 TF32 1.10-1.18x faster than
// cuDNN's on an H100 (tests/gpu/run.sh, r50-nchw against r50-nchw-cudnn-bn). 4-D float16,
// which no model runs, stays on cuDNN: not measured.
bool native_batchnorm(BatchnormKernels k, int32_t dtype, int32_t ndims);

} // namespace dtp::cudnn

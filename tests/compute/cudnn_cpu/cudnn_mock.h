/* SPDX-License-Identifier: Apache-2.0 */
// A cuDNN of plain loops on host memory, for the cuDNN plugin built for the CPU (see
// meson.build here): the descriptors the plugin sets, and the element access every
// operation shares. Each operation follows cuDNN 9's documented contract (alpha and beta
// blending, NCHW and NHWC tensors, cross-correlation, groups, the batch-norm statistics);
// it is a reference, not a copy of cuDNN's numerics: sums are in double.
#pragma once

#include <cudnn.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

// The descriptors' contents (cudnn.h declares them incomplete).
struct cudnnContext {
    cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    int n = 0, c = 0, h = 0, w = 0;
    bool set = false;
};

struct cudnnFilterStruct {
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW; // NCHW: (K, C, R, S); NHWC: (K, R, S, C)
    int k = 0, c = 0, r = 0, s = 0;
    bool set = false;
};

struct cudnnConvolutionStruct {
    int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
    int groups = 1;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    bool set = false;
};

struct cudnnPoolingStruct {
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    int window_h = 0, window_w = 0, pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
    bool set = false;
};

namespace cudnn_mock {

// The offset of element (n, c, h, w) of a tensor of its format.
inline int64_t offset(const cudnnTensorStruct &t, int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (t.format == CUDNN_TENSOR_NHWC)
        return ((n * t.h + h) * t.w + w) * t.c + c;
    return ((n * t.c + c) * t.h + h) * t.w + w;
}

// The offset of weight (k, c, r, s) of a filter of its format.
inline int64_t offset(const cudnnFilterStruct &f, int64_t k, int64_t c, int64_t r, int64_t s)
{
    if (f.format == CUDNN_TENSOR_NHWC)
        return ((k * f.r + r) * f.s + s) * f.c + c;
    return ((k * f.c + c) * f.r + r) * f.s + s;
}

inline int64_t count(const cudnnTensorStruct &t) { return int64_t(t.n) * t.c * t.h * t.w; }

// Element i of p, of dtype type, as a double; and stored from one, rounded to the type.
inline double load(cudnnDataType_t type, const void *p, int64_t i)
{
    switch (type) {
    case CUDNN_DATA_HALF: return __half2float(static_cast<const __half *>(p)[i]);
    case CUDNN_DATA_BFLOAT16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    default: return static_cast<const float *>(p)[i];
    }
}

inline void store(cudnnDataType_t type, void *p, int64_t i, double v)
{
    switch (type) {
    case CUDNN_DATA_HALF: static_cast<__half *>(p)[i] = __float2half_rn(float(v)); break;
    case CUDNN_DATA_BFLOAT16:
        static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(float(v));
        break;
    default: static_cast<float *>(p)[i] = float(v); break;
    }
}

// out = alpha * v + beta * out, cuDNN's blending; beta == 0 does not read out (it may hold
// NaN), as cuDNN documents.
inline void blend(cudnnDataType_t type, void *out, int64_t i, double v, const void *alpha,
                  const void *beta)
{
    const double a = *static_cast<const float *>(alpha), b = *static_cast<const float *>(beta);
    store(type, out, i, b == 0.0 ? a * v : a * v + b * load(type, out, i));
}

// Whether a tensor descriptor has been set and is of a type the mock computes.
inline bool usable(const cudnnTensorStruct *t)
{
    return t != nullptr && t->set &&
           (t->type == CUDNN_DATA_FLOAT || t->type == CUDNN_DATA_HALF ||
            t->type == CUDNN_DATA_BFLOAT16);
}

} // namespace cudnn_mock

/* SPDX-License-Identifier: Apache-2.0 */
// The per-plane loops of batch normalisation (onednn_batchnorm.cc). The float32 versions
// live in onednn_bn_kernels.cc, compiled for AVX-512, AVX2 and the baseline and picked
// when the plugin loads (the plugin is built for generic x86-64); the other dtypes use
// the generic templates here, through float.
#pragma once

#include "onednn_elem.h"

#include <bit>
#include <cstdint>

namespace dtp::onednn {

struct Sums {
    double a, b;
};

// sum(x - pivot), sum((x - pivot)^2)
Sums plane_moments(const float *x, int64_t n, float pivot);
// y = a x + b; with relu, max(a x + b, 0) (ReLU fused: the value ReLU would give); with
// a shortcut z (not NULL; relu then too), max(a x + b + z, 0) (add_relu_value)
void plane_affine(const float *x, const float *z, float *y, int64_t n, float a, float b,
                  bool relu);
// sum(g), sum(g (x - mean)) with g = dy, or with a mask (the output of a batch norm fused
// with ReLU; NULL for none) g = dy where mask > 0, else 0: what ReLU's backward gives
Sums plane_grad_sums(const float *x, const float *dy, const float *mask, int64_t n,
                     float mean);
// dx = a g + k x + b, g as above
void plane_grad_apply(const float *x, const float *dy, const float *mask, float *dx,
                      int64_t n, float a, float k, float b);

// Batch normalisation of float32 (rows, C) tensors: channels-last activations seen as
// (N * H * W, C). A channel is then a column with stride C, so the per-channel plane
// loops above would touch one element per cache line; these loops walk
// the rows in order and keep one accumulator per channel, vectorised across channels.
// Each call covers the columns [col, col + width) of every row, so threads can split
// the channels.
struct Columns {
    int64_t rows, stride, col, width;
};

// s1[c] = sum(x - pivot[c]), s2[c] = sum((x - pivot[c])^2) over the rows (c relative to
// col; pivot, s1 and s2 hold width values).
void rows_moments(const Columns &g, const float *x, const float *pivot, double *s1,
                  double *s2);
// y = a[c] x + b[c]; with relu, max(a[c] x + b[c], 0); with a shortcut z, as plane_affine
void rows_affine(const Columns &g, const float *x, const float *z, float *y, const float *a,
                 const float *b, bool relu);
// s1[c] = sum(g), s2[c] = sum(g (x - mean[c])), g = dy masked as in plane_grad_sums
void rows_grad_sums(const Columns &g, const float *x, const float *dy, const float *mask,
                    const float *mean, double *s1, double *s2);
// dx = a[c] g + k[c] x + b[c]
void rows_grad_apply(const Columns &g, const float *x, const float *dy, const float *mask,
                     float *dx, const float *a, const float *k, const float *b);
// The same over bfloat16 activations (channels-last bfloat16 networks), computing in
// float32 with the per-channel vectors and sums in float32 / double as above.
void rows_moments(const Columns &g, const bf16_t *x, const float *pivot, double *s1,
                  double *s2);
void rows_affine(const Columns &g, const bf16_t *x, const bf16_t *z, bf16_t *y, const float *a,
                 const float *b, bool relu);
void rows_grad_sums(const Columns &g, const bf16_t *x, const bf16_t *dy, const bf16_t *mask,
                    const float *mean, double *s1, double *s2);
void rows_grad_apply(const Columns &g, const bf16_t *x, const bf16_t *dy, const bf16_t *mask,
                     bf16_t *dx, const float *a, const float *k, const float *b);

// ReLU as its own op computes it: v where v > 0, else +0 (NaN gives 0). Applied to the
// float before rounding to T, it gives the bits that rounding first then ReLU give:
// rounding keeps the sign, and a positive float never rounds to a bfloat16 NaN.
inline float relu_value(float v) { return v > 0.0f ? v : 0.0f; }
// max(y + z, 0) with y = v as the batch norm stores it and the sum rounded to T as the
// add stores it: the bits of the batch norm, then add_relu (identity roundings for float).
template <typename T>
inline float add_relu_value(float v, float z)
{
    return relu_value(to_float(from_float<T>(to_float(from_float<T>(v)) + z)));
}
// The gradient ReLU's backward passes on: dy where the output is > 0, else +0. As a bit
// mask, not a conditional: in these scalar loops the compiler made the condition a
// branch, which the random signs mispredict every other element (the bfloat16 NCHW
// batch-norm backward ran 2-3x slower).
template <typename T>
inline float masked(const T *mask, const T *dy, int64_t i)
{
    const uint32_t keep = 0u - uint32_t(to_float(mask[i]) > 0.0f);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(to_float(dy[i])) & keep);
}

template <typename T>
Sums plane_moments(const T *x, int64_t n, float pivot)
{
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double d = double(to_float(x[i])) - pivot;
        s1 += d;
        s2 += d * d;
    }
    return {s1, s2};
}

// The generic loops, the flag and the mask tested once per plane rather than per element.
template <typename T>
void plane_affine(const T *x, const T *z, T *y, int64_t n, float a, float b, bool relu)
{
    if (z != nullptr)
        for (int64_t i = 0; i < n; ++i)
            y[i] = from_float<T>(add_relu_value<T>(a * to_float(x[i]) + b, to_float(z[i])));
    else if (relu)
        for (int64_t i = 0; i < n; ++i)
            y[i] = from_float<T>(relu_value(a * to_float(x[i]) + b));
    else
        for (int64_t i = 0; i < n; ++i)
            y[i] = from_float<T>(a * to_float(x[i]) + b);
}

template <typename T>
Sums plane_grad_sums(const T *x, const T *dy, const T *mask, int64_t n, float mean)
{
    double s1 = 0, s2 = 0;
    auto sum = [&](auto grad) {
        for (int64_t i = 0; i < n; ++i) {
            const double g = grad(i);
            s1 += g;
            s2 += g * (double(to_float(x[i])) - mean);
        }
    };
    if (mask != nullptr)
        sum([&](int64_t i) { return masked(mask, dy, i); });
    else
        sum([&](int64_t i) { return to_float(dy[i]); });
    return {s1, s2};
}

template <typename T>
void plane_grad_apply(const T *x, const T *dy, const T *mask, T *dx, int64_t n, float a,
                      float k, float b)
{
    if (mask != nullptr)
        for (int64_t i = 0; i < n; ++i)
            dx[i] = from_float<T>(a * masked(mask, dy, i) + k * to_float(x[i]) + b);
    else
        for (int64_t i = 0; i < n; ++i)
            dx[i] = from_float<T>(a * to_float(dy[i]) + k * to_float(x[i]) + b);
}

} // namespace dtp::onednn

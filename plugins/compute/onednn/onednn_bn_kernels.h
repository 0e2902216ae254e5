/* SPDX-License-Identifier: Apache-2.0 */
// The per-plane loops of batch normalisation (onednn_batchnorm.cc). The float32 versions
// live in onednn_bn_kernels.cc, compiled for AVX-512, AVX2 and the baseline and picked
// when the plugin loads (the plugin is built for generic x86-64); the other dtypes use
// the generic templates here, through float.
#pragma once

#include "onednn_elem.h"

#include <cstdint>

namespace dtp::onednn {

struct Sums {
    double a, b;
};

// sum(x - pivot), sum((x - pivot)^2)
Sums plane_moments(const float *x, int64_t n, float pivot);
// y = a x + b
void plane_affine(const float *x, float *y, int64_t n, float a, float b);
// sum(dy), sum(dy (x - mean))
Sums plane_grad_sums(const float *x, const float *dy, int64_t n, float mean);
// dx = a dy + k x + b
void plane_grad_apply(const float *x, const float *dy, float *dx, int64_t n, float a, float k,
                      float b);

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

template <typename T>
void plane_affine(const T *x, T *y, int64_t n, float a, float b)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = from_float<T>(a * to_float(x[i]) + b);
}

template <typename T>
Sums plane_grad_sums(const T *x, const T *dy, int64_t n, float mean)
{
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double g = to_float(dy[i]);
        s1 += g;
        s2 += g * (double(to_float(x[i])) - mean);
    }
    return {s1, s2};
}

template <typename T>
void plane_grad_apply(const T *x, const T *dy, T *dx, int64_t n, float a, float k, float b)
{
    for (int64_t i = 0; i < n; ++i)
        dx[i] = from_float<T>(a * to_float(dy[i]) + k * to_float(x[i]) + b);
}

} // namespace dtp::onednn

// SPDX-License-Identifier: Apache-2.0
// float32 plane loops of batch normalisation, cloned per instruction set (see the
// header). Partial sums are float in blocks of kBlock elements (vector lanes keep them
// short), added up in double, so a 400k-element channel loses no precision.
#include "onednn_bn_kernels.h"
#include "onednn_parallel.h"

#include <algorithm>

#define DTP_CLONES DTP_VECTOR_CLONES

namespace dtp::onednn {

namespace {
constexpr int64_t kBlock = 4096;
}

DTP_CLONES Sums plane_moments(const float *x, int64_t n, float pivot)
{
    double s1 = 0, s2 = 0;
    for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t end = std::min(n, start + kBlock);
        float a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
        for (int64_t i = start; i < end; ++i) {
            const float d = x[i] - pivot;
            a += d;
            b += d * d;
        }
        s1 += a;
        s2 += b;
    }
    return {s1, s2};
}

DTP_CLONES void plane_affine(const float *x, float *y, int64_t n, float a, float b)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        y[i] = a * x[i] + b;
}

DTP_CLONES Sums plane_grad_sums(const float *x, const float *dy, int64_t n, float mean)
{
    double s1 = 0, s2 = 0;
    for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t end = std::min(n, start + kBlock);
        float a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
        for (int64_t i = start; i < end; ++i) {
            a += dy[i];
            b += dy[i] * (x[i] - mean);
        }
        s1 += a;
        s2 += b;
    }
    return {s1, s2};
}

DTP_CLONES void plane_grad_apply(const float *x, const float *dy, float *dx, int64_t n,
                                 float a, float k, float b)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        dx[i] = a * dy[i] + k * x[i] + b;
}

} // namespace dtp::onednn

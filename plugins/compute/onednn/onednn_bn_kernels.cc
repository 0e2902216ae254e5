// SPDX-License-Identifier: Apache-2.0
// float32 plane loops of batch normalisation, cloned per instruction set (see the
// header). Partial sums are float in blocks of kBlock elements (kRowBlock rows in the
// channels-last loops; vector lanes keep them short), added up in double, so a
// 400k-element channel loses no precision.
#include "onednn_bn_kernels.h"
#include "onednn_parallel.h"

#include <algorithm>
#include <cstdint>
#include <vector>

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

// The loops below are templates on whether ReLU is fused (Relu) or dy is masked
// (Masked), so the unfused loops stay what they were; the fused ones compute the same
// expressions on the values ReLU would have stored, hence the same bits.
namespace {

template <bool Relu>
inline void plane_affine_impl(const float *x, float *y, int64_t n, float a, float b)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = a * x[i] + b;
        y[i] = Relu ? relu_value(v) : v;
    }
}

inline void plane_affine_add_impl(const float *x, const float *z, float *y, int64_t n, float a,
                                  float b)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = a * x[i] + b;
        y[i] = relu_value(v + z[i]);
    }
}

template <bool Masked>
inline Sums plane_grad_sums_impl(const float *x, const float *dy, const float *mask, int64_t n,
                                 float mean)
{
    double s1 = 0, s2 = 0;
    for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t end = std::min(n, start + kBlock);
        float a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
        for (int64_t i = start; i < end; ++i) {
            const float d = dy[i]; // loaded whatever the mask (see masked())
            const float g = Masked ? (mask[i] > 0.0f ? d : 0.0f) : d;
            a += g;
            b += g * (x[i] - mean);
        }
        s1 += a;
        s2 += b;
    }
    return {s1, s2};
}

template <bool Masked>
inline void plane_grad_apply_impl(const float *x, const float *dy, const float *mask,
                                  float *dx, int64_t n, float a, float k, float b)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float d = dy[i]; // loaded whatever the mask (see masked())
        const float g = Masked ? (mask[i] > 0.0f ? d : 0.0f) : d;
        dx[i] = a * g + k * x[i] + b;
    }
}

} // namespace

DTP_CLONES void plane_affine(const float *x, const float *z, float *y, int64_t n, float a,
                             float b, bool relu)
{
    if (z != nullptr)
        plane_affine_add_impl(x, z, y, n, a, b);
    else if (relu)
        plane_affine_impl<true>(x, y, n, a, b);
    else
        plane_affine_impl<false>(x, y, n, a, b);
}

DTP_CLONES Sums plane_grad_sums(const float *x, const float *dy, const float *mask, int64_t n,
                                float mean)
{
    return mask != nullptr ? plane_grad_sums_impl<true>(x, dy, mask, n, mean)
                           : plane_grad_sums_impl<false>(x, dy, mask, n, mean);
}

DTP_CLONES void plane_grad_apply(const float *x, const float *dy, const float *mask, float *dx,
                                 int64_t n, float a, float k, float b)
{
    if (mask != nullptr)
        plane_grad_apply_impl<true>(x, dy, mask, dx, n, a, k, b);
    else
        plane_grad_apply_impl<false>(x, dy, mask, dx, n, a, k, b);
}

namespace {
// Rows per float partial sum in the channels-last loops.
constexpr int64_t kRowBlock = 256;

template <typename T>
inline void moments_impl(const Columns &g, const T *x, const float *pivot, double *s1,
                         double *s2)
{
    std::vector<float> a(size_t(g.width)), b(size_t(g.width));
    std::fill(s1, s1 + g.width, 0.0);
    std::fill(s2, s2 + g.width, 0.0);
    for (int64_t start = 0; start < g.rows; start += kRowBlock) {
        const int64_t end = std::min(g.rows, start + kRowBlock);
        std::fill(a.begin(), a.end(), 0.0f);
        std::fill(b.begin(), b.end(), 0.0f);
        float *pa = a.data(), *pb = b.data();
        for (int64_t r = start; r < end; ++r) {
            const T *row = x + r * g.stride + g.col;
#pragma omp simd
            for (int64_t c = 0; c < g.width; ++c) {
                const float d = to_float(row[c]) - pivot[c];
                pa[c] += d;
                pb[c] += d * d;
            }
        }
        for (int64_t c = 0; c < g.width; ++c) {
            s1[c] += pa[c];
            s2[c] += pb[c];
        }
    }
}

template <bool Relu, typename T>
inline void affine_impl(const Columns &g, const T *x, T *y, const float *a, const float *b)
{
    for (int64_t r = 0; r < g.rows; ++r) {
        const T *in = x + r * g.stride + g.col;
        T *out = y + r * g.stride + g.col;
#pragma omp simd
        for (int64_t c = 0; c < g.width; ++c) {
            const float v = a[c] * to_float(in[c]) + b[c];
            out[c] = from_float<T>(Relu ? relu_value(v) : v);
        }
    }
}

// affine_impl with the shortcut z added before ReLU (add_relu_value).
template <typename T>
inline void affine_add_impl(const Columns &g, const T *x, const T *z, T *y, const float *a,
                            const float *b)
{
    for (int64_t r = 0; r < g.rows; ++r) {
        const T *in = x + r * g.stride + g.col;
        const T *zr = z + r * g.stride + g.col;
        T *out = y + r * g.stride + g.col;
#pragma omp simd
        for (int64_t c = 0; c < g.width; ++c) {
            const float v = a[c] * to_float(in[c]) + b[c];
            out[c] = from_float<T>(add_relu_value<T>(v, to_float(zr[c])));
        }
    }
}

// dy[c], or with a mask dy[c] where mask[c] > 0, else 0.
template <bool Masked, typename T>
inline float row_grad(const T *gr, const T *mr, int64_t c)
{
    const float g = to_float(gr[c]); // loaded whatever the mask (see masked())
    if constexpr (Masked)
        return to_float(mr[c]) > 0.0f ? g : 0.0f;
    else
        return g;
}

template <bool Masked, typename T>
inline void grad_sums_impl(const Columns &g, const T *x, const T *dy, const T *mask,
                           const float *mean, double *s1, double *s2)
{
    std::vector<float> a(size_t(g.width)), b(size_t(g.width));
    std::fill(s1, s1 + g.width, 0.0);
    std::fill(s2, s2 + g.width, 0.0);
    for (int64_t start = 0; start < g.rows; start += kRowBlock) {
        const int64_t end = std::min(g.rows, start + kRowBlock);
        std::fill(a.begin(), a.end(), 0.0f);
        std::fill(b.begin(), b.end(), 0.0f);
        float *pa = a.data(), *pb = b.data();
        for (int64_t r = start; r < end; ++r) {
            const T *xr = x + r * g.stride + g.col;
            const T *gr = dy + r * g.stride + g.col;
            const T *mr = Masked ? mask + r * g.stride + g.col : nullptr;
#pragma omp simd
            for (int64_t c = 0; c < g.width; ++c) {
                const float gv = row_grad<Masked>(gr, mr, c);
                pa[c] += gv;
                pb[c] += gv * (to_float(xr[c]) - mean[c]);
            }
        }
        for (int64_t c = 0; c < g.width; ++c) {
            s1[c] += pa[c];
            s2[c] += pb[c];
        }
    }
}

template <bool Masked, typename T>
inline void grad_apply_impl(const Columns &g, const T *x, const T *dy, const T *mask, T *dx,
                            const float *a, const float *k, const float *b)
{
    for (int64_t r = 0; r < g.rows; ++r) {
        const T *xr = x + r * g.stride + g.col;
        const T *gr = dy + r * g.stride + g.col;
        const T *mr = Masked ? mask + r * g.stride + g.col : nullptr;
        T *out = dx + r * g.stride + g.col;
#pragma omp simd
        for (int64_t c = 0; c < g.width; ++c)
            out[c] = from_float<T>(a[c] * row_grad<Masked>(gr, mr, c) +
                                   k[c] * to_float(xr[c]) + b[c]);
    }
}
} // namespace

// One clone set per element type: target_clones does not apply to templates, so each
// wrapper is a plain function whose body (the template above) is compiled per target.
DTP_CLONES void rows_moments(const Columns &g, const float *x, const float *pivot, double *s1,
                             double *s2)
{
    moments_impl(g, x, pivot, s1, s2);
}

DTP_CLONES void rows_moments(const Columns &g, const bf16_t *x, const float *pivot, double *s1,
                             double *s2)
{
    moments_impl(g, x, pivot, s1, s2);
}

DTP_CLONES void rows_affine(const Columns &g, const float *x, const float *z, float *y,
                            const float *a, const float *b, bool relu)
{
    if (z != nullptr)
        affine_add_impl(g, x, z, y, a, b);
    else if (relu)
        affine_impl<true>(g, x, y, a, b);
    else
        affine_impl<false>(g, x, y, a, b);
}

DTP_CLONES void rows_affine(const Columns &g, const bf16_t *x, const bf16_t *z, bf16_t *y,
                            const float *a, const float *b, bool relu)
{
    if (z != nullptr)
        affine_add_impl(g, x, z, y, a, b);
    else if (relu)
        affine_impl<true>(g, x, y, a, b);
    else
        affine_impl<false>(g, x, y, a, b);
}

DTP_CLONES void rows_grad_sums(const Columns &g, const float *x, const float *dy,
                               const float *mask, const float *mean, double *s1, double *s2)
{
    if (mask != nullptr)
        grad_sums_impl<true>(g, x, dy, mask, mean, s1, s2);
    else
        grad_sums_impl<false>(g, x, dy, mask, mean, s1, s2);
}

DTP_CLONES void rows_grad_sums(const Columns &g, const bf16_t *x, const bf16_t *dy,
                               const bf16_t *mask, const float *mean, double *s1, double *s2)
{
    if (mask != nullptr)
        grad_sums_impl<true>(g, x, dy, mask, mean, s1, s2);
    else
        grad_sums_impl<false>(g, x, dy, mask, mean, s1, s2);
}

DTP_CLONES void rows_grad_apply(const Columns &g, const float *x, const float *dy,
                                const float *mask, float *dx, const float *a, const float *k,
                                const float *b)
{
    if (mask != nullptr)
        grad_apply_impl<true>(g, x, dy, mask, dx, a, k, b);
    else
        grad_apply_impl<false>(g, x, dy, mask, dx, a, k, b);
}

DTP_CLONES void rows_grad_apply(const Columns &g, const bf16_t *x, const bf16_t *dy,
                                const bf16_t *mask, bf16_t *dx, const float *a, const float *k,
                                const float *b)
{
    if (mask != nullptr)
        grad_apply_impl<true>(g, x, dy, mask, dx, a, k, b);
    else
        grad_apply_impl<false>(g, x, dy, mask, dx, a, k, b);
}

} // namespace dtp::onednn

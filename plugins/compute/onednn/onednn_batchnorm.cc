// SPDX-License-Identifier: Apache-2.0
// Batch normalisation over plain (N, C[, H, W]) as loops rather than oneDNN's primitive:
// on plain NCHW oneDNN 2.6 only has its reference-grade ncsp_bnorm, which took a quarter
// of a resnet50 training step (more than the reorders to and from blocked layouts that
// its jit kernels would need). The loops run one channel per iteration, each channel's
// planes contiguous, vectorised for the CPU found at run time (onednn_bn_kernels.h); float32 is
// the fast path, bfloat16 / float16 tensors go through float. A float32 or bfloat16
// (rows, C) tensor (channels-last activations seen as (N * H * W, C)) runs on row-order
// loops instead (onednn_bn_kernels.h), vectorised across channels.
//
// save_invstd is 1 / sqrt(var + eps) (cuDNN's convention); the running statistics are
// updated as PyTorch does (unbiased variance).
#include "onednn_bn_kernels.h"
#include "onednn_context.h"
#include "onednn_elem.h"
#include "onednn_ops.h"
#include "onednn_parallel.h"

#include <cmath>
#include <vector>

namespace dtp::onednn {

namespace {

// The geometry of one channel: n planes of `plane` contiguous elements.
struct Planes {
    int64_t n, channels, plane;
    int64_t count() const { return n * plane; }
    int64_t offset(int64_t i, int64_t c) const { return (i * channels + c) * plane; }
};

Planes planes_of(const dtp_tensor_t &t) { return {t.dims[0], t.dims[1], spatial_of(t)}; }

// Sums of (x - pivot) and (x - pivot)^2 over channel c. The pivot (the channel's first
// element) keeps the one-pass variance free of cancellation when |mean| >> std.
template <typename T>
void channel_moments(const Planes &g, const T *x, int64_t c, double &mean, double &var)
{
    const float pivot = to_float(x[g.offset(0, c)]);
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < g.n; ++i) {
        const Sums s = plane_moments(x + g.offset(i, c), g.plane, pivot);
        s1 += s.a;
        s2 += s.b;
    }
    const double m = s1 / double(g.count());
    mean = pivot + m;
    var = std::max(0.0, s2 / double(g.count()) - m * m);
}

// y = a x + b over channel c (max(a x + b, 0) with relu; max(a x + b + z, 0) with a
// shortcut z).
template <typename T>
void channel_affine(const Planes &g, const T *x, const T *z, T *y, int64_t c, float a, float b,
                    bool relu)
{
    for (int64_t i = 0; i < g.n; ++i)
        plane_affine(x + g.offset(i, c), z != nullptr ? z + g.offset(i, c) : nullptr,
                     y + g.offset(i, c), g.plane, a, b, relu);
}

// Whether x is a float32 or bfloat16 (rows, C) tensor with enough channels for the row
// loops.
bool by_rows(const dtp_tensor_t &x)
{
    return (x.dtype == DTP_FLOAT32 || x.dtype == DTP_BFLOAT16) && x.ndims == 2 &&
           x.dims[1] >= 16;
}

// Calls f(T{}) with T float or bf16_t, the element type of a by_rows tensor.
template <typename F>
void by_row_dtype(const dtp_tensor_t &x, F &&f)
{
    if (x.dtype == DTP_BFLOAT16)
        f(bf16_t{});
    else
        f(float{});
}

// Calls f(columns) for this thread's share of the channels.
template <typename F>
void for_columns(const dtp_tensor_t &x, F &&f)
{
    const int64_t rows = x.dims[0], channels = x.dims[1];
    for_chunks(channels, [&](int64_t begin, int64_t count) {
        f(Columns{rows, channels, begin, count});
    }, rows * channels);
}

template <typename T>
void rows_forward_training(const dtp_tensor_t &xd, const T *x, const T *z, const float *scale,
                           const float *shift, float epsilon, float momentum, T *y,
                           float *save_mean, float *save_invstd, float *running_mean,
                           float *running_var, bool relu)
{
    const int64_t rows = xd.dims[0];
    const double count = double(rows);
    const float unbias = rows > 1 ? float(rows) / float(rows - 1) : 1.0f;
    for_columns(xd, [&](const Columns &g) {
        const size_t w = size_t(g.width);
        std::vector<double> s1(w), s2(w);
        std::vector<float> a(w), b(w), pivot(w);
        // The first row as the pivot keeps the one-pass variance free of cancellation.
        for (size_t i = 0; i < w; ++i)
            pivot[i] = to_float(x[g.col + int64_t(i)]);
        rows_moments(g, x, pivot.data(), s1.data(), s2.data());
        for (size_t i = 0; i < w; ++i) {
            const int64_t k = g.col + int64_t(i);
            const double m = s1[i] / count;
            const double mean = pivot[i] + m;
            const double var = std::max(0.0, s2[i] / count - m * m);
            const float invstd = float(1.0 / std::sqrt(var + double(epsilon)));
            a[i] = scale[k] * invstd;
            b[i] = shift[k] - float(mean) * a[i];
            save_mean[k] = float(mean);
            save_invstd[k] = invstd;
            if (running_mean != nullptr) {
                running_mean[k] = (1.0f - momentum) * running_mean[k] + momentum * float(mean);
                running_var[k] =
                    (1.0f - momentum) * running_var[k] + momentum * float(var) * unbias;
            }
        }
        rows_affine(g, x, z, y, a.data(), b.data(), relu);
    });
}

template <typename T>
void rows_backward(const dtp_tensor_t &xd, const T *x, const T *dy, const T *mask,
                   const float *scale,
                   const float *save_mean, const float *save_invstd, T *dx, float *dscale,
                   float *dshift)
{
    const double count = double(xd.dims[0]);
    for_columns(xd, [&](const Columns &g) {
        const size_t w = size_t(g.width);
        std::vector<double> sdy(w), sdyx(w);
        std::vector<float> a(w), kx(w), b0(w);
        rows_grad_sums(g, x, dy, mask, save_mean + g.col, sdy.data(), sdyx.data());
        for (size_t i = 0; i < w; ++i) {
            const int64_t k = g.col + int64_t(i);
            const double invstd = save_invstd[k];
            dshift[k] = float(sdy[i]);
            dscale[k] = float(sdyx[i] * invstd);
            const double ai = double(scale[k]) * invstd;
            const double ki = -ai * invstd * invstd * sdyx[i] / count;
            a[i] = float(ai);
            kx[i] = float(ki);
            b0[i] = float(-ai * sdy[i] / count - ki * save_mean[k]);
        }
        rows_grad_apply(g, x, dy, mask, dx, a.data(), kx.data(), b0.data());
    });
}

// The batch norm ops with ReLU fused (relu), with a shortcut added before it (z, not
// NULL) or neither; the exported ops below pick.
int32_t forward_training(void *c, const dtp_tensor_t *x_desc, const void *x, const void *z,
                         const float *scale, const float *shift, float epsilon,
                         float momentum, void *y, float *save_mean, float *save_invstd,
                         float *running_mean, float *running_var, bool relu)
{
    return guarded(c, [&] {
        if (by_rows(*x_desc))
            return by_row_dtype(*x_desc, [&](auto tag) {
                using T = decltype(tag);
                rows_forward_training(*x_desc, static_cast<const T *>(x),
                                      static_cast<const T *>(z), scale, shift, epsilon,
                                      momentum, static_cast<T *>(y), save_mean, save_invstd,
                                      running_mean, running_var, relu);
            });
        const Planes g = planes_of(*x_desc);
        const float unbias =
            g.count() > 1 ? float(g.count()) / float(g.count() - 1) : 1.0f;
        by_dtype(x_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            const auto *pz = static_cast<const T *>(z);
            auto *py = static_cast<T *>(y);
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < g.channels; ++k) {
                double mean = 0, var = 0;
                channel_moments(g, px, k, mean, var);
                const float invstd = float(1.0 / std::sqrt(var + double(epsilon)));
                const float a = scale[k] * invstd;
                channel_affine(g, px, pz, py, k, a, shift[k] - float(mean) * a, relu);
                save_mean[k] = float(mean);
                save_invstd[k] = invstd;
                if (running_mean != nullptr) {
                    running_mean[k] = (1.0f - momentum) * running_mean[k] +
                                      momentum * float(mean);
                    running_var[k] = (1.0f - momentum) * running_var[k] +
                                     momentum * float(var) * unbias;
                }
            }
        });
    });
}

int32_t forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x, const void *z,
                          const float *scale, const float *shift, const float *running_mean,
                          const float *running_var, float epsilon, void *y, bool relu)
{
    return guarded(c, [&] {
        if (by_rows(*x_desc))
            return by_row_dtype(*x_desc, [&](auto tag) {
                using T = decltype(tag);
                for_columns(*x_desc, [&](const Columns &g) {
                    std::vector<float> a(size_t(g.width)), b(size_t(g.width));
                    for (int64_t i = 0; i < g.width; ++i) {
                        const int64_t k = g.col + i;
                        a[size_t(i)] = scale[k] / std::sqrt(running_var[k] + epsilon);
                        b[size_t(i)] = shift[k] - running_mean[k] * a[size_t(i)];
                    }
                    rows_affine(g, static_cast<const T *>(x), static_cast<const T *>(z),
                                static_cast<T *>(y), a.data(), b.data(), relu);
                });
            });
        const Planes g = planes_of(*x_desc);
        by_dtype(x_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            const auto *pz = static_cast<const T *>(z);
            auto *py = static_cast<T *>(y);
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < g.channels; ++k) {
                const float a = scale[k] / std::sqrt(running_var[k] + epsilon);
                channel_affine(g, px, pz, py, k, a, shift[k] - running_mean[k] * a, relu);
            }
        });
    });
}

// mask: the fused forward's output y (dy counts where y > 0), or NULL.
int32_t backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *mask,
                 const void *dy, const float *scale, const float *save_mean,
                 const float *save_invstd, void *dx, float *dscale, float *dshift)
{
    return guarded(c, [&] {
        if (by_rows(*x_desc))
            return by_row_dtype(*x_desc, [&](auto tag) {
                using T = decltype(tag);
                rows_backward(*x_desc, static_cast<const T *>(x), static_cast<const T *>(dy),
                              static_cast<const T *>(mask), scale, save_mean, save_invstd, static_cast<T *>(dx), dscale,
                              dshift);
            });
        const Planes g = planes_of(*x_desc);
        const double count = double(g.count());
        by_dtype(x_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            const auto *pdy = static_cast<const T *>(dy);
            const auto *pm = static_cast<const T *>(mask);
            auto *pdx = static_cast<T *>(dx);
            // The mask's planes where there is one.
            auto at = [&](int64_t i, int64_t k) {
                return pm != nullptr ? pm + g.offset(i, k) : nullptr;
            };
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < g.channels; ++k) {
                const float mean = save_mean[k], invstd = save_invstd[k];
                // sum(dy) and sum(dy (x - mean)) over the channel.
                double sdy = 0, sdyx = 0;
                for (int64_t i = 0; i < g.n; ++i) {
                    const Sums s = plane_grad_sums(px + g.offset(i, k), pdy + g.offset(i, k),
                                                   at(i, k), g.plane, mean);
                    sdy += s.a;
                    sdyx += s.b;
                }
                dshift[k] = float(sdy);
                dscale[k] = float(sdyx * invstd);
                // dx = a (dy - sum(dy)/M - (x - mean) invstd^2 sum(dy (x - mean))/M)
                //    = a dy + kx x + b0
                const double a = double(scale[k]) * invstd;
                const double kx = -a * double(invstd) * invstd * sdyx / count;
                const double b0 = -a * sdy / count - kx * mean;
                for (int64_t i = 0; i < g.n; ++i)
                    plane_grad_apply(px + g.offset(i, k), pdy + g.offset(i, k), at(i, k),
                                     pdx + g.offset(i, k), g.plane, float(a), float(kx),
                                     float(b0));
            }
        });
    });
}

} // namespace

int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean,
                                   float *save_invstd, float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, nullptr, scale, shift, epsilon, momentum, y,
                            save_mean, save_invstd, running_mean, running_var, false);
}

int32_t batchnorm_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                        const float *scale, const float *shift,
                                        float epsilon, float momentum, void *y,
                                        float *save_mean, float *save_invstd,
                                        float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, nullptr, scale, shift, epsilon, momentum, y,
                            save_mean, save_invstd, running_mean, running_var, true);
}

int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, nullptr, scale, shift, running_mean, running_var,
                             epsilon, y, false);
}

int32_t batchnorm_relu_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                         const float *scale, const float *shift,
                                         const float *running_mean, const float *running_var,
                                         float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, nullptr, scale, shift, running_mean, running_var,
                             epsilon, y, true);
}

int32_t batchnorm_add_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                            const void *z, const float *scale,
                                            const float *shift, float epsilon, float momentum,
                                            void *y, float *save_mean, float *save_invstd,
                                            float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, z, scale, shift, epsilon, momentum, y, save_mean,
                            save_invstd, running_mean, running_var, true);
}

int32_t batchnorm_add_relu_forward_inference(void *c, const dtp_tensor_t *x_desc,
                                             const void *x, const void *z, const float *scale,
                                             const float *shift, const float *running_mean,
                                             const float *running_var, float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, z, scale, shift, running_mean, running_var, epsilon,
                             y, true);
}

int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale, const float *save_mean,
                           const float *save_invstd, float, void *dx, float *dscale,
                           float *dshift)
{
    return backward(c, x_desc, x, nullptr, dy, scale, save_mean, save_invstd, dx, dscale,
                    dshift);
}

int32_t batchnorm_relu_backward(void *c, const dtp_tensor_t *x_desc, const void *x,
                                const void *y, const void *dy, const float *scale,
                                const float *save_mean, const float *save_invstd, float,
                                void *dx, float *dscale, float *dshift)
{
    return backward(c, x_desc, x, y, dy, scale, save_mean, save_invstd, dx, dscale, dshift);
}

} // namespace dtp::onednn

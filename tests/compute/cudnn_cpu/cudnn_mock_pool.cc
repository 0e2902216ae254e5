// SPDX-License-Identifier: Apache-2.0
// The mock cuDNN's 2-D pooling (cudnn_mock.h): max, and the averages that count the
// padding or not, forward and backward, in double. Padding is never a value: max pooling
// takes the window's largest input inside the image, and max's backward sends each
// gradient to the first position of that largest input in window order (row by row),
// recomputed from x. A window must overlap the image (padding smaller than the window).
#include "cudnn_mock.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace cudnn_mock;

namespace {

bool same_dims(const cudnnTensorStruct &a, const cudnnTensorStruct &b)
{
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

bool is_max(cudnnPoolingMode_t mode)
{
    return mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC;
}

// The checks both directions share: descriptors set, one dtype, a known mode, padding
// smaller than the window, and y of the documented shape,
// 1 + (in + 2 pad - window) / stride rounded down.
cudnnStatus_t check(const cudnnPoolingStruct *p, const cudnnTensorStruct *x,
                    const cudnnTensorStruct *y)
{
    if (p == nullptr || !p->set || !usable(x) || !usable(y) || x->type != y->type)
        return CUDNN_STATUS_BAD_PARAM;
    if (!is_max(p->mode) && p->mode != CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING &&
        p->mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
        return CUDNN_STATUS_NOT_SUPPORTED;
    if (p->pad_h >= p->window_h || p->pad_w >= p->window_w)
        return CUDNN_STATUS_BAD_PARAM; // a window of padding only: no maximum, no average
    if (x->h + 2 * p->pad_h < p->window_h || x->w + 2 * p->pad_w < p->window_w)
        return CUDNN_STATUS_BAD_PARAM;
    const int oh = 1 + (x->h + 2 * p->pad_h - p->window_h) / p->stride_h;
    const int ow = 1 + (x->w + 2 * p->pad_w - p->window_w) / p->stride_w;
    if (y->n != x->n || y->c != x->c || y->h != oh || y->w != ow)
        return CUDNN_STATUS_BAD_PARAM;
    return CUDNN_STATUS_SUCCESS;
}

// Calls f(ih, iw) for the image positions of output (oh, ow)'s window, row by row.
template <typename F>
void for_window(const cudnnPoolingStruct &p, const cudnnTensorStruct &x, int oh, int ow, F &&f)
{
    const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
    for (int ih = h0; ih < h0 + p.window_h; ++ih)
        for (int iw = w0; iw < w0 + p.window_w; ++iw)
            if (ih >= 0 && ih < x.h && iw >= 0 && iw < x.w)
                f(ih, iw);
}

// The divisor of an average: the whole window, or its part inside the image.
double divisor(const cudnnPoolingStruct &p, const cudnnTensorStruct &x, int oh, int ow)
{
    if (p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)
        return double(p.window_h) * p.window_w;
    int inside = 0;
    for_window(p, x, oh, ow, [&](int, int) { ++inside; });
    return inside;
}

// The image position of the first largest input of the window (NaN never compares larger;
// a window of NaN only gives its first position).
struct Argmax {
    int h = -1, w = -1;
    double value = -std::numeric_limits<double>::infinity();
};

Argmax argmax(const cudnnPoolingStruct &p, const cudnnTensorStruct &xd, const void *x, int n,
              int c, int oh, int ow)
{
    Argmax best;
    for_window(p, xd, oh, ow, [&](int ih, int iw) {
        const double v = load(xd.type, x, offset(xd, n, c, ih, iw));
        const bool first = best.h < 0;
        if (first || v > best.value) {
            best.h = ih;
            best.w = iw;
            if (!std::isnan(v))
                best.value = v;
        }
    });
    return best;
}

} // namespace

extern "C" {

// y = alpha * (the window's maximum, or its sum / divisor) + beta * y.
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool,
                                  const void *alpha, const cudnnTensorDescriptor_t x_desc,
                                  const void *x, const void *beta,
                                  const cudnnTensorDescriptor_t y_desc, void *y)
{
    if (cudnnStatus_t rc = check(pool, x_desc, y_desc))
        return rc;
    if (handle == nullptr || alpha == nullptr || beta == nullptr || x == nullptr || y == nullptr)
        return CUDNN_STATUS_BAD_PARAM;
    const cudnnPoolingStruct &p = *pool;
    const cudnnTensorStruct &xd = *x_desc, &yd = *y_desc;
    for (int n = 0; n < yd.n; ++n)
        for (int c = 0; c < yd.c; ++c)
            for (int oh = 0; oh < yd.h; ++oh)
                for (int ow = 0; ow < yd.w; ++ow) {
                    double v;
                    if (is_max(p.mode)) {
                        v = argmax(p, xd, x, n, c, oh, ow).value;
                    } else {
                        double sum = 0;
                        for_window(p, xd, oh, ow, [&](int ih, int iw) {
                            sum += load(xd.type, x, offset(xd, n, c, ih, iw));
                        });
                        v = sum / divisor(p, xd, oh, ow);
                    }
                    blend(yd.type, y, offset(yd, n, c, oh, ow), v, alpha, beta);
                }
    return CUDNN_STATUS_SUCCESS;
}

// dx = alpha * (the gradients of the windows that hold each input) + beta * dx: max
// pooling's to its argmax, an average's spread over its window by its divisor. y is
// checked, not read: the argmax comes from x, which max pooling needs.
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool,
                                   const void *alpha, const cudnnTensorDescriptor_t y_desc,
                                   const void *y, const cudnnTensorDescriptor_t dy_desc,
                                   const void *dy, const cudnnTensorDescriptor_t x_desc,
                                   const void *x, const void *beta,
                                   const cudnnTensorDescriptor_t dx_desc, void *dx)
{
    if (cudnnStatus_t rc = check(pool, x_desc, y_desc))
        return rc;
    if (!usable(dy_desc) || !usable(dx_desc) || !same_dims(*dy_desc, *y_desc) ||
        !same_dims(*dx_desc, *x_desc) || dy_desc->type != y_desc->type ||
        dx_desc->type != x_desc->type)
        return CUDNN_STATUS_BAD_PARAM;
    const cudnnPoolingStruct &p = *pool;
    if (handle == nullptr || alpha == nullptr || beta == nullptr || dy == nullptr ||
        dx == nullptr || (is_max(p.mode) && (x == nullptr || y == nullptr)))
        return CUDNN_STATUS_BAD_PARAM;
    const cudnnTensorStruct &xd = *x_desc, &dyd = *dy_desc, &dxd = *dx_desc;
    // Windows overlap: the gradient gathers in double, indexed as dx is, then blends once.
    std::vector<double> grad(static_cast<size_t>(count(dxd)), 0.0);
    for (int n = 0; n < dyd.n; ++n)
        for (int c = 0; c < dyd.c; ++c)
            for (int oh = 0; oh < dyd.h; ++oh)
                for (int ow = 0; ow < dyd.w; ++ow) {
                    const double g = load(dyd.type, dy, offset(dyd, n, c, oh, ow));
                    if (is_max(p.mode)) {
                        const Argmax best = argmax(p, xd, x, n, c, oh, ow);
                        grad[size_t(offset(dxd, n, c, best.h, best.w))] += g;
                        continue;
                    }
                    const double share = g / divisor(p, xd, oh, ow);
                    for_window(p, xd, oh, ow, [&](int ih, int iw) {
                        grad[size_t(offset(dxd, n, c, ih, iw))] += share;
                    });
                }
    for (int64_t i = 0; i < count(dxd); ++i)
        blend(dxd.type, dx, i, grad[size_t(i)], alpha, beta);
    return CUDNN_STATUS_SUCCESS;
}

} // extern "C"

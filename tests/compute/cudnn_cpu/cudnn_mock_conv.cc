// SPDX-License-Identifier: Apache-2.0
// The mock cuDNN's convolutions (cudnn_mock.h): forward, backward data and backward
// filter as cross-correlation with padding, stride, dilation and groups, each output
// element a sum in double written once through alpha/beta blending. CUDNN_TENSOR_OP_MATH
// on float32 data rounds every operand to TF32 first, as tensor cores do, so that the
// plugin's TF32 choice shows in results. The algorithm searches offer one algorithm
// (deterministic, no workspace); the mock computes the same whatever algorithm is named.
#include "cudnn_mock.h"

#include <cstring>
#include <vector>

using namespace cudnn_mock;

namespace {

bool filter_usable(const cudnnFilterStruct *f)
{
    return f != nullptr && f->set &&
           (f->type == CUDNN_DATA_FLOAT || f->type == CUDNN_DATA_HALF ||
            f->type == CUDNN_DATA_BFLOAT16);
}

int64_t count(const cudnnFilterStruct &f) { return int64_t(f.k) * f.c * f.r * f.s; }

// cuDNN's documented output size: 1 + (in + 2 pad - ((filter - 1) dilation + 1)) / stride,
// or 0 where the dilated filter is larger than the padded input.
int output_size(int in, int pad, int filter, int dilation, int stride)
{
    const int span = (filter - 1) * dilation + 1;
    if (in + 2 * pad < span)
        return 0;
    return 1 + (in + 2 * pad - span) / stride;
}

// The checks every convolution call shares: descriptors set, cross-correlation, one
// dtype, x's channels groups * the filter's, the filter's count a multiple of groups,
// y of the documented shape, and a compute type cuDNN accepts for the data.
cudnnStatus_t check(const cudnnTensorStruct *x, const cudnnFilterStruct *w,
                    const cudnnConvolutionStruct *conv, const cudnnTensorStruct *y)
{
    if (!usable(x) || !filter_usable(w) || !usable(y) || conv == nullptr || !conv->set)
        return CUDNN_STATUS_BAD_PARAM;
    if (conv->mode == CUDNN_CONVOLUTION)
        return CUDNN_STATUS_NOT_SUPPORTED; // true convolution (a flipped filter): unused
    if (conv->mode != CUDNN_CROSS_CORRELATION)
        return CUDNN_STATUS_BAD_PARAM;
    if (x->type != w->type || y->type != x->type)
        return CUDNN_STATUS_BAD_PARAM;
    const int g = conv->groups;
    if (x->c != g * w->c || w->k % g != 0 || y->c != w->k || y->n != x->n)
        return CUDNN_STATUS_BAD_PARAM;
    const int oh = output_size(x->h, conv->pad_h, w->r, conv->dilation_h, conv->stride_h);
    const int ow = output_size(x->w, conv->pad_w, w->s, conv->dilation_w, conv->stride_w);
    if (oh <= 0 || ow <= 0 || y->h != oh || y->w != ow)
        return CUDNN_STATUS_BAD_PARAM;
    // float32 accumulation always; the pseudo-half configurations accumulate in the data's
    // own type on a GPU, here in double like the rest.
    const bool compute_ok = conv->compute == CUDNN_DATA_FLOAT ||
                            (conv->compute == CUDNN_DATA_HALF && x->type == CUDNN_DATA_HALF) ||
                            (conv->compute == CUDNN_DATA_BFLOAT16 && x->type == CUDNN_DATA_BFLOAT16);
    return compute_ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t check_call(cudnnHandle_t handle, const void *alpha, const void *beta,
                         const void *a, const void *b, const void *out)
{
    return handle == nullptr || alpha == nullptr || beta == nullptr || a == nullptr ||
                   b == nullptr || out == nullptr
               ? CUDNN_STATUS_BAD_PARAM
               : CUDNN_STATUS_SUCCESS;
}

// v rounded to TF32 (float32 with 10 mantissa bits), to nearest, ties to even; infinities
// and NaN as they are.
float round_tf32(float v)
{
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u)
        return v;
    bits += 0xfffu + ((bits >> 13) & 1u);
    bits &= ~0x1fffu;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

// Whether the convolution multiplies float32 data in TF32: CUDNN_TENSOR_OP_MATH allows it
// on float32, and tensor cores take it; CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH and
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION stay exact here.
bool tf32(const cudnnConvolutionStruct &conv, cudnnDataType_t type)
{
    return conv.math == CUDNN_TENSOR_OP_MATH && type == CUDNN_DATA_FLOAT;
}

// The n elements at p, in memory order, as the multiplier sees them.
std::vector<double> operand(cudnnDataType_t type, const void *p, int64_t n, bool to_tf32)
{
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[size_t(i)] = to_tf32 ? round_tf32(static_cast<const float *>(p)[i]) : load(type, p, i);
    return v;
}

// The geometry of one checked convolution.
struct Geometry {
    const cudnnTensorStruct &x;
    const cudnnFilterStruct &w;
    const cudnnConvolutionStruct &conv;
    const cudnnTensorStruct &y;
    int filters_per_group() const { return w.k / conv.groups; }
    // The input row (column) that output row oh (column ow) reads with filter tap r (s).
    int in_h(int oh, int r) const { return oh * conv.stride_h - conv.pad_h + r * conv.dilation_h; }
    int in_w(int ow, int s) const { return ow * conv.stride_w - conv.pad_w + s * conv.dilation_w; }
    // The output row that reads input row ih with tap r, or -1 where none does.
    int out_h(int ih, int r) const
    {
        return out_of(ih + conv.pad_h - r * conv.dilation_h, conv.stride_h, y.h);
    }
    int out_w(int iw, int s) const
    {
        return out_of(iw + conv.pad_w - s * conv.dilation_w, conv.stride_w, y.w);
    }
    static int out_of(int t, int stride, int size)
    {
        if (t < 0 || t % stride != 0 || t / stride >= size)
            return -1;
        return t / stride;
    }
};

// The one algorithm every search offers, after the checks the convolution itself makes:
// measured in no time, with no workspace, deterministic, in the descriptor's math type.
template <typename Perf, typename Algo>
cudnnStatus_t one_algorithm(cudnnStatus_t valid, const cudnnConvolutionStruct *conv, Algo algo,
                            int requested, int *returned, Perf *perf)
{
    if (valid != CUDNN_STATUS_SUCCESS)
        return valid;
    if (requested < 1 || returned == nullptr || perf == nullptr)
        return CUDNN_STATUS_BAD_PARAM;
    perf[0] = Perf{};
    perf[0].algo = algo;
    perf[0].status = CUDNN_STATUS_SUCCESS;
    perf[0].time = 0.0f;
    perf[0].memory = 0;
    perf[0].determinism = CUDNN_DETERMINISTIC;
    perf[0].mathType = conv->math;
    *returned = 1;
    return CUDNN_STATUS_SUCCESS;
}

// No algorithm needs a workspace; an algorithm outside the enumeration is refused.
cudnnStatus_t no_workspace(cudnnStatus_t valid, int algo, int algo_count, size_t *bytes)
{
    if (valid != CUDNN_STATUS_SUCCESS)
        return valid;
    if (algo < 0 || algo >= algo_count || bytes == nullptr)
        return CUDNN_STATUS_BAD_PARAM;
    *bytes = 0;
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

// y = alpha * sum over (c, r, s) of x[n, group(k) C + c, in_h, in_w] w[k, c, r, s]
//     + beta * y.
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                      const cudnnTensorDescriptor_t x_desc, const void *x,
                                      const cudnnFilterDescriptor_t w_desc, const void *w,
                                      const cudnnConvolutionDescriptor_t conv_desc,
                                      cudnnConvolutionFwdAlgo_t, void *, size_t,
                                      const void *beta, const cudnnTensorDescriptor_t y_desc,
                                      void *y)
{
    if (cudnnStatus_t rc = check(x_desc, w_desc, conv_desc, y_desc))
        return rc;
    if (cudnnStatus_t rc = check_call(handle, alpha, beta, x, w, y))
        return rc;
    const Geometry g{*x_desc, *w_desc, *conv_desc, *y_desc};
    const bool round = tf32(g.conv, g.x.type);
    const std::vector<double> xv = operand(g.x.type, x, count(g.x), round);
    const std::vector<double> wv = operand(g.w.type, w, count(g.w), round);
    for (int n = 0; n < g.y.n; ++n)
        for (int k = 0; k < g.y.c; ++k) {
            const int first_c = k / g.filters_per_group() * g.w.c;
            for (int oh = 0; oh < g.y.h; ++oh)
                for (int ow = 0; ow < g.y.w; ++ow) {
                    double sum = 0;
                    for (int c = 0; c < g.w.c; ++c)
                        for (int r = 0; r < g.w.r; ++r) {
                            const int ih = g.in_h(oh, r);
                            if (ih < 0 || ih >= g.x.h)
                                continue;
                            for (int s = 0; s < g.w.s; ++s) {
                                const int iw = g.in_w(ow, s);
                                if (iw < 0 || iw >= g.x.w)
                                    continue;
                                sum += xv[size_t(offset(g.x, n, first_c + c, ih, iw))] *
                                       wv[size_t(offset(g.w, k, c, r, s))];
                            }
                        }
                    blend(g.y.type, y, offset(g.y, n, k, oh, ow), sum, alpha, beta);
                }
        }
    return CUDNN_STATUS_SUCCESS;
}

// dx = alpha * sum over the (k, r, s) whose forward read x[n, ci, ih, iw] of
//      dy[n, k, out_h, out_w] w[k, ci - group C, r, s] + beta * dx: forward's adjoint.
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                           const cudnnFilterDescriptor_t w_desc, const void *w,
                                           const cudnnTensorDescriptor_t dy_desc, const void *dy,
                                           const cudnnConvolutionDescriptor_t conv_desc,
                                           cudnnConvolutionBwdDataAlgo_t, void *, size_t,
                                           const void *beta,
                                           const cudnnTensorDescriptor_t dx_desc, void *dx)
{
    if (cudnnStatus_t rc = check(dx_desc, w_desc, conv_desc, dy_desc))
        return rc;
    if (cudnnStatus_t rc = check_call(handle, alpha, beta, w, dy, dx))
        return rc;
    const Geometry g{*dx_desc, *w_desc, *conv_desc, *dy_desc};
    const bool round = tf32(g.conv, g.x.type);
    const std::vector<double> dyv = operand(g.y.type, dy, count(g.y), round);
    const std::vector<double> wv = operand(g.w.type, w, count(g.w), round);
    const int per_group = g.filters_per_group();
    for (int n = 0; n < g.x.n; ++n)
        for (int ci = 0; ci < g.x.c; ++ci) {
            const int group = ci / g.w.c, c = ci % g.w.c;
            for (int ih = 0; ih < g.x.h; ++ih)
                for (int iw = 0; iw < g.x.w; ++iw) {
                    double sum = 0;
                    for (int k = group * per_group; k < (group + 1) * per_group; ++k)
                        for (int r = 0; r < g.w.r; ++r) {
                            const int oh = g.out_h(ih, r);
                            if (oh < 0)
                                continue;
                            for (int s = 0; s < g.w.s; ++s) {
                                const int ow = g.out_w(iw, s);
                                if (ow < 0)
                                    continue;
                                sum += dyv[size_t(offset(g.y, n, k, oh, ow))] *
                                       wv[size_t(offset(g.w, k, c, r, s))];
                            }
                        }
                    blend(g.x.type, dx, offset(g.x, n, ci, ih, iw), sum, alpha, beta);
                }
        }
    return CUDNN_STATUS_SUCCESS;
}

// dw = alpha * sum over (n, oh, ow) of x[n, group(k) C + c, in_h, in_w] dy[n, k, oh, ow]
//      + beta * dw.
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t x_desc, const void *x,
                                             const cudnnTensorDescriptor_t dy_desc,
                                             const void *dy,
                                             const cudnnConvolutionDescriptor_t conv_desc,
                                             cudnnConvolutionBwdFilterAlgo_t, void *, size_t,
                                             const void *beta,
                                             const cudnnFilterDescriptor_t dw_desc, void *dw)
{
    if (cudnnStatus_t rc = check(x_desc, dw_desc, conv_desc, dy_desc))
        return rc;
    if (cudnnStatus_t rc = check_call(handle, alpha, beta, x, dy, dw))
        return rc;
    const Geometry g{*x_desc, *dw_desc, *conv_desc, *dy_desc};
    const bool round = tf32(g.conv, g.x.type);
    const std::vector<double> xv = operand(g.x.type, x, count(g.x), round);
    const std::vector<double> dyv = operand(g.y.type, dy, count(g.y), round);
    for (int k = 0; k < g.w.k; ++k) {
        const int first_c = k / g.filters_per_group() * g.w.c;
        for (int c = 0; c < g.w.c; ++c)
            for (int r = 0; r < g.w.r; ++r)
                for (int s = 0; s < g.w.s; ++s) {
                    double sum = 0;
                    for (int n = 0; n < g.y.n; ++n)
                        for (int oh = 0; oh < g.y.h; ++oh) {
                            const int ih = g.in_h(oh, r);
                            if (ih < 0 || ih >= g.x.h)
                                continue;
                            for (int ow = 0; ow < g.y.w; ++ow) {
                                const int iw = g.in_w(ow, s);
                                if (iw < 0 || iw >= g.x.w)
                                    continue;
                                sum += xv[size_t(offset(g.x, n, first_c + c, ih, iw))] *
                                       dyv[size_t(offset(g.y, n, k, oh, ow))];
                            }
                        }
                    blend(g.w.type, dw, offset(g.w, k, c, r, s), sum, alpha, beta);
                }
    }
    return CUDNN_STATUS_SUCCESS;
}

// The searches: by measurement (Find) and by heuristics (Get_v7) alike. The backward
// searches offer ALGO_1, deterministic in cuDNN as the mock is (ALGO_0 is not).
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle,
                                                   const cudnnTensorDescriptor_t x_desc,
                                                   const cudnnFilterDescriptor_t w_desc,
                                                   const cudnnConvolutionDescriptor_t conv_desc,
                                                   const cudnnTensorDescriptor_t y_desc,
                                                   const int requested, int *returned,
                                                   cudnnConvolutionFwdAlgoPerf_t *perf)
{
    return one_algorithm(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                           : check(x_desc, w_desc, conv_desc, y_desc),
                         conv_desc, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, requested,
                         returned, perf);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle,
                                                     const cudnnTensorDescriptor_t x_desc,
                                                     const cudnnFilterDescriptor_t w_desc,
                                                     const cudnnConvolutionDescriptor_t conv_desc,
                                                     const cudnnTensorDescriptor_t y_desc,
                                                     const int requested, int *returned,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf)
{
    return cudnnFindConvolutionForwardAlgorithm(handle, x_desc, w_desc, conv_desc, y_desc,
                                                requested, returned, perf);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnTensorDescriptor_t dx_desc, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    return one_algorithm(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                           : check(dx_desc, w_desc, conv_desc, dy_desc),
                         conv_desc, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, requested, returned,
                         perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnTensorDescriptor_t dx_desc, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    return cudnnFindConvolutionBackwardDataAlgorithm(handle, w_desc, dy_desc, conv_desc,
                                                     dx_desc, requested, returned, perf);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnFilterDescriptor_t dw_desc, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
    return one_algorithm(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                           : check(x_desc, dw_desc, conv_desc, dy_desc),
                         conv_desc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, requested, returned,
                         perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnFilterDescriptor_t dw_desc, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
    return cudnnFindConvolutionBackwardFilterAlgorithm(handle, x_desc, dy_desc, conv_desc,
                                                       dw_desc, requested, returned, perf);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
    const cudnnFilterDescriptor_t w_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnTensorDescriptor_t y_desc, cudnnConvolutionFwdAlgo_t algo, size_t *bytes)
{
    return no_workspace(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                          : check(x_desc, w_desc, conv_desc, y_desc),
                        algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnTensorDescriptor_t dx_desc, cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes)
{
    return no_workspace(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                          : check(dx_desc, w_desc, conv_desc, dy_desc),
                        algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnConvolutionDescriptor_t conv_desc,
    const cudnnFilterDescriptor_t dw_desc, cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes)
{
    return no_workspace(handle == nullptr ? CUDNN_STATUS_BAD_PARAM
                                          : check(x_desc, dw_desc, conv_desc, dy_desc),
                        algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, bytes);
}

} // extern "C"

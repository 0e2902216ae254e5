// SPDX-License-Identifier: Apache-2.0
// The mock cuDNN's convolutions and pooling checked without trusting them: small cases
// worked out by hand, NHWC against NCHW, the adjoint identities that tie forward to both
// backward passes (<conv(x, w), dy> = <x, dgrad(dy, w)> = <w, wgrad(x, dy)>), blending,
// TF32 rounding, and the shapes and settings it refuses. Only cudnn.h's API is used.
#include <cudnn.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Floats = std::vector<float>;

cudnnHandle_t handle()
{
    static cudnnHandle_t h = [] {
        cudnnHandle_t made = nullptr;
        EXPECT_EQ(cudnnCreate(&made), CUDNN_STATUS_SUCCESS);
        return made;
    }();
    return h;
}

// Descriptors that destroy themselves.
struct TensorDesc {
    cudnnTensorDescriptor_t d = nullptr;
    TensorDesc(cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c, int h, int w)
    {
        EXPECT_EQ(cudnnCreateTensorDescriptor(&d), CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetTensor4dDescriptor(d, format, type, n, c, h, w), CUDNN_STATUS_SUCCESS);
    }
    TensorDesc(const TensorDesc &) = delete;
    TensorDesc &operator=(const TensorDesc &) = delete;
    ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
};

struct FilterDesc {
    cudnnFilterDescriptor_t d = nullptr;
    FilterDesc(cudnnTensorFormat_t format, cudnnDataType_t type, int k, int c, int r, int s)
    {
        EXPECT_EQ(cudnnCreateFilterDescriptor(&d), CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetFilter4dDescriptor(d, type, format, k, c, r, s), CUDNN_STATUS_SUCCESS);
    }
    FilterDesc(const FilterDesc &) = delete;
    FilterDesc &operator=(const FilterDesc &) = delete;
    ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};

// One convolution's shape: x (n, c, h, w), filters (k, c / groups, r, s).
struct ConvCase {
    int n = 1, c = 1, h = 3, w = 3, k = 1, r = 2, s = 2;
    int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
    int oh() const { return 1 + (h + 2 * pad_h - ((r - 1) * dil_h + 1)) / stride_h; }
    int ow() const { return 1 + (w + 2 * pad_w - ((s - 1) * dil_w + 1)) / stride_w; }
    size_t x_count() const { return size_t(n) * c * h * w; }
    size_t w_count() const { return size_t(k) * (c / groups) * r * s; }
    size_t y_count() const { return size_t(n) * k * oh() * ow(); }
};

struct ConvDesc {
    cudnnConvolutionDescriptor_t d = nullptr;
    ConvDesc(const ConvCase &p, cudnnMathType_t math,
             cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION)
    {
        EXPECT_EQ(cudnnCreateConvolutionDescriptor(&d), CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetConvolution2dDescriptor(d, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                                                  p.dil_h, p.dil_w, mode, CUDNN_DATA_FLOAT),
                  CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetConvolutionGroupCount(d, p.groups), CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetConvolutionMathType(d, math), CUDNN_STATUS_SUCCESS);
    }
    ConvDesc(const ConvDesc &) = delete;
    ConvDesc &operator=(const ConvDesc &) = delete;
    ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};

// (n, c, h, w) order to (n, h, w, c) and back; filters (k, c, r, s) to (k, r, s, c) alike.
Floats to_nhwc(const Floats &v, int n, int c, int h, int w)
{
    if (v.empty())
        return v; // no data (average pooling's y)
    Floats out(v.size());
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < c; ++j)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x)
                    out[((size_t(i) * h + y) * w + x) * c + j] =
                        v[((size_t(i) * c + j) * h + y) * w + x];
    return out;
}

Floats from_nhwc(const Floats &v, int n, int c, int h, int w)
{
    if (v.empty())
        return v; // no data (average pooling's y)
    Floats out(v.size());
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < c; ++j)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x)
                    out[((size_t(i) * c + j) * h + y) * w + x] =
                        v[((size_t(i) * h + y) * w + x) * c + j];
    return out;
}

// Runs one convolution pass on float32 data given and returned in NCHW (K, C, R, S)
// order, laid out in `format` for the call.
struct ConvRun {
    ConvCase p;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    float alpha = 1.0f, beta = 0.0f;

    bool nhwc() const { return format == CUDNN_TENSOR_NHWC; }
    Floats in_x(const Floats &v) const { return nhwc() ? to_nhwc(v, p.n, p.c, p.h, p.w) : v; }
    Floats in_y(const Floats &v) const
    {
        return nhwc() ? to_nhwc(v, p.n, p.k, p.oh(), p.ow()) : v;
    }
    Floats in_w(const Floats &v) const
    {
        return nhwc() ? to_nhwc(v, p.k, p.c / p.groups, p.r, p.s) : v;
    }
    Floats out_x(const Floats &v) const { return nhwc() ? from_nhwc(v, p.n, p.c, p.h, p.w) : v; }
    Floats out_y(const Floats &v) const
    {
        return nhwc() ? from_nhwc(v, p.n, p.k, p.oh(), p.ow()) : v;
    }
    Floats out_w(const Floats &v) const
    {
        return nhwc() ? from_nhwc(v, p.k, p.c / p.groups, p.r, p.s) : v;
    }

    Floats forward(const Floats &x, const Floats &w, Floats y = {}) const
    {
        TensorDesc xd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w);
        TensorDesc yd(format, CUDNN_DATA_FLOAT, p.n, p.k, p.oh(), p.ow());
        FilterDesc wd(format, CUDNN_DATA_FLOAT, p.k, p.c / p.groups, p.r, p.s);
        ConvDesc cd(p, math);
        Floats xl = in_x(x), wl = in_w(w), yl = y.empty() ? Floats(p.y_count()) : in_y(y);
        EXPECT_EQ(cudnnConvolutionForward(handle(), &alpha, xd.d, xl.data(), wd.d, wl.data(),
                                          cd.d, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                          nullptr, 0, &beta, yd.d, yl.data()),
                  CUDNN_STATUS_SUCCESS);
        return out_y(yl);
    }

    Floats backward_data(const Floats &w, const Floats &dy, Floats dx = {}) const
    {
        TensorDesc xd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w);
        TensorDesc yd(format, CUDNN_DATA_FLOAT, p.n, p.k, p.oh(), p.ow());
        FilterDesc wd(format, CUDNN_DATA_FLOAT, p.k, p.c / p.groups, p.r, p.s);
        ConvDesc cd(p, math);
        Floats wl = in_w(w), yl = in_y(dy), xl = dx.empty() ? Floats(p.x_count()) : in_x(dx);
        EXPECT_EQ(cudnnConvolutionBackwardData(handle(), &alpha, wd.d, wl.data(), yd.d,
                                               yl.data(), cd.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                               nullptr, 0, &beta, xd.d, xl.data()),
                  CUDNN_STATUS_SUCCESS);
        return out_x(xl);
    }

    Floats backward_filter(const Floats &x, const Floats &dy, Floats dw = {}) const
    {
        TensorDesc xd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w);
        TensorDesc yd(format, CUDNN_DATA_FLOAT, p.n, p.k, p.oh(), p.ow());
        FilterDesc wd(format, CUDNN_DATA_FLOAT, p.k, p.c / p.groups, p.r, p.s);
        ConvDesc cd(p, math);
        Floats xl = in_x(x), yl = in_y(dy), wl = dw.empty() ? Floats(p.w_count()) : in_w(dw);
        EXPECT_EQ(cudnnConvolutionBackwardFilter(handle(), &alpha, xd.d, xl.data(), yd.d,
                                                 yl.data(), cd.d,
                                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                                 &beta, wd.d, wl.data()),
                  CUDNN_STATUS_SUCCESS);
        return out_w(wl);
    }
};

// The definition, written out once more, in NCHW: y[n, k, oh, ow] = sum over c, r, s of
// x[n, g C + c, oh stride - pad + r dil, ow stride - pad + s dil] w[k, c, r, s].
std::vector<double> reference_forward(const ConvCase &p, const Floats &x, const Floats &w)
{
    const int cg = p.c / p.groups, kg = p.k / p.groups;
    std::vector<double> y(p.y_count());
    for (int n = 0; n < p.n; ++n)
        for (int k = 0; k < p.k; ++k)
            for (int oh = 0; oh < p.oh(); ++oh)
                for (int ow = 0; ow < p.ow(); ++ow) {
                    double sum = 0;
                    for (int c = 0; c < cg; ++c)
                        for (int r = 0; r < p.r; ++r)
                            for (int s = 0; s < p.s; ++s) {
                                const int ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
                                const int iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
                                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                                    continue;
                                const int ci = k / kg * cg + c;
                                sum += double(x[((size_t(n) * p.c + ci) * p.h + ih) * p.w + iw]) *
                                       w[((size_t(k) * cg + c) * p.r + r) * p.s + s];
                            }
                    y[((size_t(n) * p.k + k) * p.oh() + oh) * p.ow() + ow] = sum;
                }
    return y;
}

double dot(const Floats &a, const Floats &b)
{
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i)
        sum += double(a[i]) * b[i];
    return sum;
}

Floats iota(size_t count, float first = 1.0f)
{
    Floats v(count);
    for (size_t i = 0; i < count; ++i)
        v[i] = first + float(i);
    return v;
}

void expect_values(const Floats &got, const std::vector<double> &want, const char *what)
{
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], float(want[i])) << what << ", element " << i;
}

const Floats kX = iota(9);                 // the 3x3 image 1 2 3 / 4 5 6 / 7 8 9
const Floats kW = {1.0f, 2.0f, 3.0f, 4.0f}; // the 2x2 filter 1 2 / 3 4

TEST(CudnnMockConv, HandComputedForward)
{
    ConvRun run;
    expect_values(run.forward(kX, kW), {37, 47, 67, 77}, "stride 1");
    run.p.stride_h = run.p.stride_w = 2;
    expect_values(run.forward(kX, kW), {37}, "stride 2");
    run.p.pad_h = run.p.pad_w = 1;
    // Windows at rows -1..0 and 1..2 (columns alike): the padding reads as zero.
    expect_values(run.forward(kX, kW), {4, 18, 36, 77}, "stride 2, padding 1");
    run.p.stride_h = run.p.stride_w = 1;
    expect_values(run.forward(kX, kW),
                  {4, 11, 18, 9, 18, 37, 47, 21, 36, 67, 77, 33, 14, 23, 26, 9},
                  "stride 1, padding 1");
    ConvRun dilated;
    dilated.p.dil_h = dilated.p.dil_w = 2;
    // Taps at the corners: 1*1 + 3*2 + 7*3 + 9*4.
    expect_values(dilated.forward(kX, kW), {64}, "dilation 2");
}

TEST(CudnnMockConv, HandComputedGroups)
{
    // Two groups of one channel: filter 0 sees channel 0 (1..9), filter 1 (0 0 / 0 1)
    // channel 1 (10..18) only.
    ConvRun run;
    run.p.c = 2;
    run.p.k = 2;
    run.p.groups = 2;
    const Floats w = {1, 2, 3, 4, 0, 0, 0, 1};
    expect_values(run.forward(iota(18), w), {37, 47, 67, 77, 14, 15, 17, 18}, "groups 2");
    run.format = CUDNN_TENSOR_NHWC;
    expect_values(run.forward(iota(18), w), {37, 47, 67, 77, 14, 15, 17, 18}, "groups 2, NHWC");
}

TEST(CudnnMockConv, HandComputedBackward)
{
    ConvRun run;
    const Floats ones(4, 1.0f);
    // dx sums the filter taps that read each pixel; dw sums each tap's 2x2 of pixels.
    expect_values(run.backward_data(kW, ones), {1, 3, 2, 4, 10, 6, 3, 7, 4}, "backward data");
    expect_values(run.backward_filter(kX, ones), {12, 16, 24, 28}, "backward filter");
    // Stride 2, padding 1: output (0, 0) reads pixel (0, 0) with tap (1, 1) only.
    run.p.stride_h = run.p.stride_w = 2;
    run.p.pad_h = run.p.pad_w = 1;
    expect_values(run.backward_data(kW, {1, 0, 0, 0}), {4, 0, 0, 0, 0, 0, 0, 0, 0},
                  "backward data, stride 2, padding 1");
    expect_values(run.backward_filter(kX, {1, 0, 0, 0}), {0, 0, 0, 1},
                  "backward filter, stride 2, padding 1");
}

TEST(CudnnMockConv, BlendsWithAlphaAndBeta)
{
    ConvRun run;
    run.alpha = 2.0f;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // beta 0 never reads the output, NaN in it or not.
    expect_values(run.forward(kX, kW, Floats(4, nan)), {74, 94, 134, 154}, "forward, beta 0");
    expect_values(run.backward_data(kW, Floats(4, 1.0f), Floats(9, nan)),
                  {2, 6, 4, 8, 20, 12, 6, 14, 8}, "backward data, beta 0");
    expect_values(run.backward_filter(kX, Floats(4, 1.0f), Floats(4, nan)), {24, 32, 48, 56},
                  "backward filter, beta 0");
    run.beta = 0.5f;
    expect_values(run.forward(kX, kW, {2, 4, 6, 8}), {75, 96, 137, 158}, "forward, beta 0.5");
    expect_values(run.backward_data(kW, Floats(4, 1.0f), Floats(9, 2.0f)),
                  {3, 7, 5, 9, 21, 13, 7, 15, 9}, "backward data, beta 0.5");
    expect_values(run.backward_filter(kX, Floats(4, 1.0f), {2, 4, 6, 8}), {25, 34, 51, 60},
                  "backward filter, beta 0.5");
}

// A random grouped, strided, padded, dilated convolution whose output is not empty.
ConvCase random_case(std::mt19937 &rng)
{
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ConvCase p;
    p.groups = pick(1, 3);
    p.n = pick(1, 2);
    p.c = p.groups * pick(1, 2);
    p.k = p.groups * pick(1, 2);
    p.r = pick(1, 3);
    p.s = pick(1, 3);
    p.stride_h = pick(1, 3);
    p.stride_w = pick(1, 3);
    p.dil_h = pick(1, 2);
    p.dil_w = pick(1, 2);
    p.pad_h = pick(0, 2);
    p.pad_w = pick(0, 2);
    const int span_h = (p.r - 1) * p.dil_h + 1, span_w = (p.s - 1) * p.dil_w + 1;
    p.h = std::max(1, span_h - 2 * p.pad_h) + pick(0, 5);
    p.w = std::max(1, span_w - 2 * p.pad_w) + pick(0, 5);
    return p;
}

// Small integers: every product and sum is exact in float32 and double, so the identities
// hold exactly and any indexing slip shows.
Floats random_ints(std::mt19937 &rng, size_t count)
{
    std::uniform_int_distribution<int> d(-3, 3);
    Floats v(count);
    for (float &e : v)
        e = float(d(rng));
    return v;
}

Floats random_floats(std::mt19937 &rng, size_t count)
{
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    Floats v(count);
    for (float &e : v)
        e = d(rng);
    return v;
}

std::string describe(const ConvCase &p, cudnnTensorFormat_t format)
{
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s x %dx%dx%dx%d, w %dx%dx%dx%d, pad %d,%d stride %d,%d dil %d,%d groups %d",
                  format == CUDNN_TENSOR_NHWC ? "NHWC" : "NCHW", p.n, p.c, p.h, p.w, p.k,
                  p.c / p.groups, p.r, p.s, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dil_h,
                  p.dil_w, p.groups);
    return text;
}

TEST(CudnnMockConv, AdjointIdentitiesHoldExactly)
{
    std::mt19937 rng(20261126);
    for (int trial = 0; trial < 30; ++trial) {
        const ConvCase p = random_case(rng);
        const Floats x = random_ints(rng, p.x_count()), w = random_ints(rng, p.w_count());
        const Floats dy = random_ints(rng, p.y_count());
        for (cudnnTensorFormat_t format : {CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC}) {
            SCOPED_TRACE(describe(p, format));
            ConvRun run;
            run.p = p;
            run.format = format;
            const Floats y = run.forward(x, w);
            expect_values(y, reference_forward(p, x, w), "forward against the definition");
            const double fwd = dot(y, dy);
            EXPECT_EQ(fwd, dot(x, run.backward_data(w, dy))) << "<conv(x, w), dy> = <x, dgrad>";
            EXPECT_EQ(fwd, dot(w, run.backward_filter(x, dy))) << "<conv(x, w), dy> = <w, wgrad>";
        }
    }
}

TEST(CudnnMockConv, NhwcMatchesNchwAfterTranspose)
{
    std::mt19937 rng(7);
    ConvCase p;
    p.n = 2, p.c = 4, p.h = 5, p.w = 6, p.k = 6, p.r = 3, p.s = 2, p.groups = 2;
    p.pad_h = 1, p.stride_h = 2, p.dil_w = 2;
    const Floats x = random_floats(rng, p.x_count()), w = random_floats(rng, p.w_count());
    const Floats dy = random_floats(rng, p.y_count());
    ConvRun nchw, nhwc;
    nchw.p = nhwc.p = p;
    nhwc.format = CUDNN_TENSOR_NHWC;
    // ConvRun lays NHWC data out itself and brings results back to NCHW order.
    auto same = [](const Floats &a, const Floats &b, const char *what) {
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            EXPECT_FLOAT_EQ(a[i], b[i]) << what << ", element " << i;
    };
    same(nchw.forward(x, w), nhwc.forward(x, w), "forward");
    same(nchw.backward_data(w, dy), nhwc.backward_data(w, dy), "backward data");
    same(nchw.backward_filter(x, dy), nhwc.backward_filter(x, dy), "backward filter");
    // And the NHWC memory really is channels last: pixel (0, 0)'s channels lead.
    const Floats xl = nhwc.in_x(x);
    EXPECT_EQ(xl[1], x[size_t(p.h) * p.w]);
}

constexpr float kOneUlp20 = 1.0f / (1 << 20); // below TF32's 10 mantissa bits
constexpr float kHalfTf32Ulp = 1.0f / (1 << 11);

TEST(CudnnMockConv, TensorOpMathRoundsFloat32OperandsToTf32)
{
    // A 1x1 convolution by 1: y is x as the multiplier saw it.
    ConvRun run;
    run.p.h = 1, run.p.w = 4, run.p.r = 1, run.p.s = 1;
    const Floats x = {1 + kOneUlp20, 1 + kHalfTf32Ulp, 1 + 3 * kHalfTf32Ulp,
                      1 + kHalfTf32Ulp + kOneUlp20};
    const Floats one = {1.0f};
    run.math = CUDNN_FMA_MATH;
    EXPECT_EQ(run.forward(x, one), x);
    run.math = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    EXPECT_EQ(run.forward(x, one), x);
    run.math = CUDNN_TENSOR_OP_MATH;
    // To nearest, ties to even: 1 + 2^-11 is halfway and goes down to 1, 1 + 3 2^-11 goes
    // up to 1 + 2^-9, and just past halfway goes up.
    const Floats tf32 = {1.0f, 1.0f, 1 + 4 * kHalfTf32Ulp, 1 + 2 * kHalfTf32Ulp};
    EXPECT_EQ(run.forward(x, one), tf32);
    // The filter operand too, and both backward passes' operands.
    EXPECT_EQ(run.forward(Floats(4, 1.0f), {1 + kOneUlp20}), Floats(4, 1.0f));
    EXPECT_EQ(run.backward_data(one, x), tf32);
    EXPECT_EQ(run.backward_filter(x, {1, 0, 0, 0}), Floats{1.0f});
    run.math = CUDNN_FMA_MATH;
    EXPECT_EQ(run.backward_filter(x, {1, 0, 0, 0}), Floats{x[0]});
}

// float16 and bfloat16 data: products of the stored values summed exactly, rounded once.
template <typename T, typename From, typename To>
void check_low_precision(cudnnDataType_t type, From from_float, To to_float)
{
    std::mt19937 rng(3);
    ConvCase p;
    p.n = 2, p.c = 4, p.h = 5, p.w = 4, p.k = 2, p.r = 3, p.s = 3, p.pad_h = p.pad_w = 1;
    p.groups = 2;
    const Floats xf = random_floats(rng, p.x_count()), wf = random_floats(rng, p.w_count());
    std::vector<T> x, w, y(p.y_count());
    Floats xs, ws; // the values as stored
    for (float v : xf) {
        x.push_back(from_float(v));
        xs.push_back(to_float(x.back()));
    }
    for (float v : wf) {
        w.push_back(from_float(v));
        ws.push_back(to_float(w.back()));
    }
    TensorDesc xd(CUDNN_TENSOR_NCHW, type, p.n, p.c, p.h, p.w);
    TensorDesc yd(CUDNN_TENSOR_NCHW, type, p.n, p.k, p.oh(), p.ow());
    FilterDesc wd(CUDNN_TENSOR_NCHW, type, p.k, p.c / p.groups, p.r, p.s);
    ConvDesc cd(p, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
    const float one = 1, zero = 0;
    ASSERT_EQ(cudnnConvolutionForward(handle(), &one, xd.d, x.data(), wd.d, w.data(), cd.d,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                      yd.d, y.data()),
              CUDNN_STATUS_SUCCESS);
    const std::vector<double> want = reference_forward(p, xs, ws);
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(to_float(y[i]), to_float(from_float(float(want[i])))) << "element " << i;
    // A float32 filter with these activations is refused: one dtype per convolution.
    FilterDesc wrong(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p.k, p.c / p.groups, p.r, p.s);
    EXPECT_EQ(cudnnConvolutionForward(handle(), &one, xd.d, x.data(), wrong.d, wf.data(), cd.d,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                      yd.d, y.data()),
              CUDNN_STATUS_BAD_PARAM);
}

TEST(CudnnMockConv, Float16AndBfloat16RoundOnceAtTheEnd)
{
    check_low_precision<__half>(
        CUDNN_DATA_HALF, [](float v) { return __float2half_rn(v); },
        [](__half v) { return __half2float(v); });
    check_low_precision<__nv_bfloat16>(
        CUDNN_DATA_BFLOAT16, [](float v) { return __float2bfloat16_rn(v); },
        [](__nv_bfloat16 v) { return __bfloat162float(v); });
}

TEST(CudnnMockConv, SearchesOfferOneAlgorithmWithoutWorkspace)
{
    ConvCase p;
    TensorDesc xd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3);
    TensorDesc yd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    FilterDesc wd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    ConvDesc cd(p, CUDNN_TENSOR_OP_MATH);
    int found = -1;
    cudnnConvolutionFwdAlgoPerf_t fwd[4];
    ASSERT_EQ(cudnnFindConvolutionForwardAlgorithm(handle(), xd.d, wd.d, cd.d, yd.d, 4, &found,
                                                   fwd),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    EXPECT_EQ(fwd[0].status, CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(fwd[0].time, 0.0f);
    EXPECT_EQ(fwd[0].memory, 0u);
    EXPECT_EQ(fwd[0].mathType, CUDNN_TENSOR_OP_MATH);
    found = -1;
    ASSERT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(handle(), xd.d, wd.d, cd.d, yd.d, 4, &found,
                                                     fwd),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    cudnnConvolutionBwdDataAlgoPerf_t data[4];
    found = -1;
    ASSERT_EQ(cudnnFindConvolutionBackwardDataAlgorithm(handle(), wd.d, yd.d, cd.d, xd.d, 4,
                                                        &found, data),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    EXPECT_EQ(data[0].status, CUDNN_STATUS_SUCCESS);
    found = -1;
    ASSERT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle(), wd.d, yd.d, cd.d, xd.d, 4,
                                                          &found, data),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    cudnnConvolutionBwdFilterAlgoPerf_t filter[4];
    found = -1;
    ASSERT_EQ(cudnnFindConvolutionBackwardFilterAlgorithm(handle(), xd.d, yd.d, cd.d, wd.d, 4,
                                                          &found, filter),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    EXPECT_EQ(filter[0].status, CUDNN_STATUS_SUCCESS);
    found = -1;
    ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle(), xd.d, yd.d, cd.d, wd.d, 4,
                                                            &found, filter),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    size_t bytes = 99;
    EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle(), xd.d, wd.d, cd.d, yd.d,
                                                      fwd[0].algo, &bytes),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(bytes, 0u);
    bytes = 99;
    EXPECT_EQ(cudnnGetConvolutionBackwardDataWorkspaceSize(handle(), wd.d, yd.d, cd.d, xd.d,
                                                           data[0].algo, &bytes),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(bytes, 0u);
    bytes = 99;
    EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle(), xd.d, yd.d, cd.d, wd.d,
                                                             filter[0].algo, &bytes),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(bytes, 0u);
}

TEST(CudnnMockConv, RefusesWrongShapesAndSettings)
{
    ConvCase p;
    const float one = 1, zero = 0;
    Floats x(9), w(4), y(16);
    TensorDesc xd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3);
    FilterDesc wd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    ConvDesc cd(p, CUDNN_FMA_MATH);
    auto forward = [&](cudnnTensorDescriptor_t x_desc, cudnnFilterDescriptor_t w_desc,
                       cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y_desc) {
        return cudnnConvolutionForward(handle(), &one, x_desc, x.data(), w_desc, w.data(), conv,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                       &zero, y_desc, y.data());
    };
    // y one row too tall: 3x3 by 2x2 gives 2x2.
    TensorDesc tall(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 2);
    EXPECT_EQ(forward(xd.d, wd.d, cd.d, tall.d), CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnConvolutionBackwardData(handle(), &one, wd.d, w.data(), tall.d, y.data(), cd.d,
                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &zero,
                                           xd.d, x.data()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnConvolutionBackwardFilter(handle(), &one, xd.d, x.data(), tall.d, y.data(),
                                             cd.d, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr,
                                             0, &zero, wd.d, w.data()),
              CUDNN_STATUS_BAD_PARAM);
    int found = -1;
    cudnnConvolutionFwdAlgoPerf_t perf[1];
    EXPECT_EQ(cudnnFindConvolutionForwardAlgorithm(handle(), xd.d, wd.d, cd.d, tall.d, 1, &found,
                                                   perf),
              CUDNN_STATUS_BAD_PARAM);
    size_t bytes = 0;
    EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle(), xd.d, wd.d, cd.d, tall.d,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                      &bytes),
              CUDNN_STATUS_BAD_PARAM);
    TensorDesc yd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    EXPECT_EQ(forward(xd.d, wd.d, cd.d, yd.d), CUDNN_STATUS_SUCCESS);
    // True convolution (a flipped filter) is not offered.
    ConvDesc flipped(p, CUDNN_FMA_MATH, CUDNN_CONVOLUTION);
    EXPECT_EQ(forward(xd.d, wd.d, flipped.d, yd.d), CUDNN_STATUS_NOT_SUPPORTED);
    // Filter and activations of different dtypes.
    FilterDesc half_w(CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 2, 2);
    EXPECT_EQ(forward(xd.d, half_w.d, cd.d, yd.d), CUDNN_STATUS_BAD_PARAM);
    // Three channels do not split into two groups of the filter's one.
    ConvCase grouped;
    grouped.groups = 2;
    ConvDesc two_groups(grouped, CUDNN_FMA_MATH);
    TensorDesc three(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 3, 3);
    EXPECT_EQ(forward(three.d, wd.d, two_groups.d, yd.d), CUDNN_STATUS_BAD_PARAM);
    // Missing and never-set descriptors.
    EXPECT_EQ(forward(nullptr, wd.d, cd.d, yd.d), CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(forward(xd.d, nullptr, cd.d, yd.d), CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(forward(xd.d, wd.d, nullptr, yd.d), CUDNN_STATUS_BAD_PARAM);
    cudnnTensorDescriptor_t unset_t = nullptr;
    cudnnFilterDescriptor_t unset_f = nullptr;
    cudnnConvolutionDescriptor_t unset_c = nullptr;
    ASSERT_EQ(cudnnCreateTensorDescriptor(&unset_t), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateFilterDescriptor(&unset_f), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateConvolutionDescriptor(&unset_c), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(forward(xd.d, wd.d, cd.d, unset_t), CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(forward(xd.d, unset_f, cd.d, yd.d), CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(forward(xd.d, wd.d, unset_c, yd.d), CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(unset_t);
    cudnnDestroyFilterDescriptor(unset_f);
    cudnnDestroyConvolutionDescriptor(unset_c);
}

// One pooling's shape: x (n, c, h, w), a window of wh x ww.
struct PoolCase {
    int n = 1, c = 1, h = 3, w = 3, wh = 2, ww = 2, pad_h = 0, pad_w = 0, stride_h = 1,
        stride_w = 1;
    int oh() const { return 1 + (h + 2 * pad_h - wh) / stride_h; }
    int ow() const { return 1 + (w + 2 * pad_w - ww) / stride_w; }
    size_t x_count() const { return size_t(n) * c * h * w; }
    size_t y_count() const { return size_t(n) * c * oh() * ow(); }
};

struct PoolDesc {
    cudnnPoolingDescriptor_t d = nullptr;
    PoolDesc(const PoolCase &p, cudnnPoolingMode_t mode)
    {
        EXPECT_EQ(cudnnCreatePoolingDescriptor(&d), CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(cudnnSetPooling2dDescriptor(d, mode, CUDNN_NOT_PROPAGATE_NAN, p.wh, p.ww,
                                              p.pad_h, p.pad_w, p.stride_h, p.stride_w),
                  CUDNN_STATUS_SUCCESS);
    }
    PoolDesc(const PoolDesc &) = delete;
    PoolDesc &operator=(const PoolDesc &) = delete;
    ~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
};

// Pooling on float32 data given and returned in NCHW order, laid out in `format`.
struct PoolRun {
    PoolCase p;
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    float alpha = 1.0f, beta = 0.0f;

    bool nhwc() const { return format == CUDNN_TENSOR_NHWC; }
    Floats in_x(const Floats &v) const { return nhwc() ? to_nhwc(v, p.n, p.c, p.h, p.w) : v; }
    Floats in_y(const Floats &v) const
    {
        return nhwc() ? to_nhwc(v, p.n, p.c, p.oh(), p.ow()) : v;
    }
    Floats out_x(const Floats &v) const { return nhwc() ? from_nhwc(v, p.n, p.c, p.h, p.w) : v; }
    Floats out_y(const Floats &v) const
    {
        return nhwc() ? from_nhwc(v, p.n, p.c, p.oh(), p.ow()) : v;
    }

    Floats forward(const Floats &x, Floats y = {}) const
    {
        TensorDesc xd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w);
        TensorDesc yd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.oh(), p.ow());
        PoolDesc pd(p, mode);
        Floats xl = in_x(x), yl = y.empty() ? Floats(p.y_count()) : in_y(y);
        EXPECT_EQ(cudnnPoolingForward(handle(), pd.d, &alpha, xd.d, xl.data(), &beta, yd.d,
                                      yl.data()),
                  CUDNN_STATUS_SUCCESS);
        return out_y(yl);
    }

    Floats backward(const Floats &x, const Floats &y, const Floats &dy, Floats dx = {}) const
    {
        TensorDesc xd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w);
        TensorDesc yd(format, CUDNN_DATA_FLOAT, p.n, p.c, p.oh(), p.ow());
        PoolDesc pd(p, mode);
        Floats xl = in_x(x), yl = in_y(y), dyl = in_y(dy);
        Floats dxl = dx.empty() ? Floats(p.x_count()) : in_x(dx);
        EXPECT_EQ(cudnnPoolingBackward(handle(), pd.d, &alpha, yd.d, yl.data(), yd.d, dyl.data(),
                                       xd.d, xl.data(), &beta, xd.d, dxl.data()),
                  CUDNN_STATUS_SUCCESS);
        return out_x(dxl);
    }
};

TEST(CudnnMockPool, MaxByHandWithATie)
{
    // Windows (0, 0) and (1, 0) each hold two 5s: the first in window order (row by row)
    // takes the gradient.
    const Floats x = {1, 5, 2, 5, 3, 0, 4, 1, 5};
    PoolRun run;
    const Floats y = run.forward(x);
    expect_values(y, {5, 5, 5, 5}, "max forward");
    expect_values(run.backward(x, y, {1, 2, 3, 4}), {0, 3, 0, 3, 0, 0, 0, 0, 4}, "max backward");
    run.format = CUDNN_TENSOR_NHWC;
    expect_values(run.backward(x, y, {1, 2, 3, 4}), {0, 3, 0, 3, 0, 0, 0, 0, 4},
                  "max backward, NHWC");
}

TEST(CudnnMockPool, PaddingIsNeverAValue)
{
    // 2x2 windows, stride 2, padding 1 over -1..-9: the corner window holds one pixel.
    PoolRun run;
    run.p.stride_h = run.p.stride_w = 2;
    run.p.pad_h = run.p.pad_w = 1;
    Floats negative = iota(9);
    for (float &v : negative)
        v = -v;
    expect_values(run.forward(negative), {-1, -2, -4, -5}, "max ignores the padding");
    // Over 1..9: windows {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
    run.mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    expect_values(run.forward(kX), {0.25, 1.25, 2.75, 7}, "average over the whole window");
    expect_values(run.backward(kX, {}, {1, 0, 0, 0}), {0.25, 0, 0, 0, 0, 0, 0, 0, 0},
                  "average backward over the whole window");
    run.mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    expect_values(run.forward(kX), {1, 2.5, 5.5, 7}, "average over the image's part");
    expect_values(run.backward(kX, {}, {0, 1, 0, 0}), {0, 0.5, 0.5, 0, 0, 0, 0, 0, 0},
                  "average backward over the image's part");
    run.format = CUDNN_TENSOR_NHWC;
    expect_values(run.forward(kX), {1, 2.5, 5.5, 7}, "average over the image's part, NHWC");
}

TEST(CudnnMockPool, BlendsWithAlphaAndBeta)
{
    PoolRun run;
    run.alpha = 2.0f;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    expect_values(run.forward(kX, Floats(4, nan)), {10, 12, 16, 18}, "beta 0");
    run.beta = 1.0f;
    expect_values(run.forward(kX, {1, 1, 1, 1}), {11, 13, 17, 19}, "beta 1");
    expect_values(run.backward(kX, {5, 6, 8, 9}, {1, 1, 1, 1}, Floats(9, 1.0f)),
                  {1, 1, 1, 1, 3, 3, 1, 3, 3}, "backward, beta 1");
}

PoolCase random_pool(std::mt19937 &rng)
{
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    PoolCase p;
    p.n = pick(1, 2);
    p.c = pick(1, 3);
    p.wh = pick(1, 3);
    p.ww = pick(1, 3);
    p.pad_h = pick(0, p.wh - 1);
    p.pad_w = pick(0, p.ww - 1);
    p.stride_h = pick(1, 3);
    p.stride_w = pick(1, 3);
    p.h = std::max(1, p.wh - 2 * p.pad_h) + pick(0, 5);
    p.w = std::max(1, p.ww - 2 * p.pad_w) + pick(0, 5);
    return p;
}

TEST(CudnnMockPool, AdjointIdentities)
{
    // Average pooling is linear: <pool(x), dy> = <x, pool_backward(dy)>. Max pooling is
    // linear where it is smooth: y picks x at the argmax, so <y, dy> = <x, dx> too.
    std::mt19937 rng(11);
    for (int trial = 0; trial < 30; ++trial) {
        const PoolCase p = random_pool(rng);
        const Floats x = random_floats(rng, p.x_count()), dy = random_floats(rng, p.y_count());
        for (cudnnPoolingMode_t mode :
             {CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
              CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_POOLING_MAX})
            for (cudnnTensorFormat_t format : {CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC}) {
                SCOPED_TRACE("trial " + std::to_string(trial) + ", mode " +
                             std::to_string(mode) + ", format " + std::to_string(format));
                PoolRun run;
                run.p = p;
                run.mode = mode;
                run.format = format;
                const Floats y = run.forward(x), dx = run.backward(x, y, dy);
                const double lhs = dot(y, dy), rhs = dot(x, dx);
                EXPECT_NEAR(lhs, rhs, 1e-5 * (1 + std::fabs(lhs)));
            }
    }
}

TEST(CudnnMockPool, NhwcMatchesNchwAfterTranspose)
{
    std::mt19937 rng(5);
    PoolCase p;
    p.n = 2, p.c = 3, p.h = 5, p.w = 4, p.wh = 3, p.ww = 2, p.pad_h = 1, p.stride_h = 2;
    const Floats x = random_floats(rng, p.x_count()), dy = random_floats(rng, p.y_count());
    for (cudnnPoolingMode_t mode :
         {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING}) {
        PoolRun nchw, nhwc;
        nchw.p = nhwc.p = p;
        nchw.mode = nhwc.mode = mode;
        nhwc.format = CUDNN_TENSOR_NHWC;
        const Floats y = nchw.forward(x);
        EXPECT_EQ(y, nhwc.forward(x)) << "mode " << mode;
        EXPECT_EQ(nchw.backward(x, y, dy), nhwc.backward(x, y, dy)) << "mode " << mode;
    }
}

TEST(CudnnMockPool, RefusesWrongShapes)
{
    PoolCase p;
    PoolDesc pd(p, CUDNN_POOLING_MAX);
    const float one = 1, zero = 0;
    Floats x(9), y(9), dx(9);
    TensorDesc xd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3);
    TensorDesc yd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
    TensorDesc wide(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 3);
    TensorDesc two_channels(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 2, 2);
    EXPECT_EQ(cudnnPoolingForward(handle(), pd.d, &one, xd.d, x.data(), &zero, yd.d, y.data()),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnPoolingForward(handle(), pd.d, &one, xd.d, x.data(), &zero, wide.d, y.data()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnPoolingForward(handle(), pd.d, &one, xd.d, x.data(), &zero, two_channels.d,
                                  y.data()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnPoolingBackward(handle(), pd.d, &one, wide.d, y.data(), wide.d, y.data(), xd.d,
                                   x.data(), &zero, xd.d, dx.data()),
              CUDNN_STATUS_BAD_PARAM);
    // dy of another shape than y, dx of another than x.
    EXPECT_EQ(cudnnPoolingBackward(handle(), pd.d, &one, yd.d, y.data(), wide.d, y.data(), xd.d,
                                   x.data(), &zero, xd.d, dx.data()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnPoolingBackward(handle(), pd.d, &one, yd.d, y.data(), yd.d, y.data(), xd.d,
                                   x.data(), &zero, wide.d, dx.data()),
              CUDNN_STATUS_BAD_PARAM);
    // Max pooling's backward needs x.
    EXPECT_EQ(cudnnPoolingBackward(handle(), pd.d, &one, yd.d, y.data(), yd.d, y.data(), xd.d,
                                   nullptr, &zero, xd.d, dx.data()),
              CUDNN_STATUS_BAD_PARAM);
    // A window of padding only: padding 2 around a 2x2 window.
    PoolCase padded;
    padded.pad_h = padded.pad_w = 2;
    PoolDesc all_padding(padded, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
    TensorDesc big(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, padded.oh(), padded.ow());
    Floats out(size_t(padded.oh()) * padded.ow());
    EXPECT_EQ(cudnnPoolingForward(handle(), all_padding.d, &one, xd.d, x.data(), &zero, big.d,
                                  out.data()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnPoolingForward(handle(), nullptr, &one, xd.d, x.data(), &zero, yd.d, y.data()),
              CUDNN_STATUS_BAD_PARAM);
}

} // namespace

// SPDX-License-Identifier: Apache-2.0
// The cuDNN plugin against the oneDNN plugin (itself checked against PyTorch) on the same
// inputs: every operation runs on the GPU from device memory and is compared on the host,
// in strict float32 (DISTTRAIN_TF32=0); one test checks the default TF32 convolutions
// to TF32's precision, and the contexts' tf32_convolutions attribute says which is on;
// one runs convolution and pooling on channels-last activations.
// Without a GPU the plugin declines with "no GPU" and every test
// here is skipped.
#include "cudnn_test_fixture.h"

#include <algorithm>

#include <cstring>
#include <string>

namespace dt::test {
namespace {

// Pooling forward and backward on the oneDNN reference: y of x, and dx given dy.
void reference_pool(dt_compute_h cpu, const dt_pool_params_t &pp, const dt_tensor_desc_t &xd,
                    const std::vector<float> &x, const dt_tensor_desc_t &yd,
                    const std::vector<float> &dy, std::vector<float> *y, std::vector<float> *dx)
{
    size_t bytes = 0;
    ASSERT_EQ(dt_compute_pool_workspace_size(cpu, &pp, &xd, &yd, &bytes), DT_OK);
    std::vector<unsigned char> workspace(bytes + 1);
    y->assign(dy.size(), 0.0f);
    dx->assign(x.size(), 0.0f);
    ASSERT_EQ(dt_compute_pool_forward(cpu, &pp, &xd, x.data(), &yd, y->data(),
                                      workspace.data()), DT_OK);
    ASSERT_EQ(dt_compute_pool_backward(cpu, &pp, &xd, x.data(), &yd, y->data(), dy.data(),
                                       dx->data(), workspace.data()), DT_OK);
}

// A training batch norm, forward and backward: the oneDNN reference's results, or the
// device buffers the GPU writes them to.
template <typename Buffer>
struct Norm {
    Buffer y, mean, invstd, running_mean, running_var, dx, dscale, dshift;
};

// The buffers of a batch norm over c channels of n values, each made by make(its initial
// values): all zero but the running statistics, which start from (0, 1).
template <typename Make>
auto norm_buffers(Make make, size_t n, size_t c) -> Norm<decltype(make(std::vector<float>()))>
{
    return {make(std::vector<float>(n)),       make(std::vector<float>(c)),
            make(std::vector<float>(c)),       make(std::vector<float>(c, 0.0f)),
            make(std::vector<float>(c, 1.0f)), make(std::vector<float>(n)),
            make(std::vector<float>(c)),       make(std::vector<float>(c))};
}

float *ptr(std::vector<float> &v) { return v.data(); }
float *ptr(float *p) { return p; }

// A training batch norm of x over the channels of d on h, forward then backward (given
// dy), into r's buffers: the oneDNN reference's host vectors or the GPU's device ones.
template <typename Buffer>
void batchnorm_both_ways(dt_compute_h h, const dt_tensor_desc_t &d, const void *x,
                         const float *scale, const float *shift, const void *dy,
                         Norm<Buffer> &r)
{
    ASSERT_EQ(dt_compute_batchnorm_forward_training(h, &d, x, scale, shift, 1e-5f, 0.1f,
                                                    ptr(r.y), ptr(r.mean), ptr(r.invstd),
                                                    ptr(r.running_mean), ptr(r.running_var)),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(h, &d, x, dy, scale, ptr(r.mean), ptr(r.invstd),
                                            1e-5f, ptr(r.dx), ptr(r.dscale), ptr(r.dshift)),
              DT_OK) << dt_last_error();
}

// The oneDNN reference's batch norm of x, forward then backward, into host vectors.
void reference_batchnorm(dt_compute_h cpu, const dt_tensor_desc_t &d,
                         const std::vector<float> &x, const std::vector<float> &scale,
                         const std::vector<float> &shift, const std::vector<float> &dy,
                         Norm<std::vector<float>> &r)
{
    r = norm_buffers([](std::vector<float> v) { return v; }, x.size(), scale.size());
    batchnorm_both_ways(cpu, d, x.data(), scale.data(), shift.data(), dy.data(), r);
}

TEST_F(Cudnn, MatmulAllTransposes)
{
    const int m = 33, n = 17, k = 65;
    auto a = random_vector(m * k, 1), b = random_vector(k * n, 2), c0 = random_vector(m * n, 3);
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            std::vector<float> ref = c0;
            ASSERT_EQ(dt_compute_matmul(cpu, DT_FLOAT32, DT_FLOAT32, ta, tb, m, n, k, 0.5f,
                                        a.data(), b.data(), 1.5f, ref.data()), DT_OK);
            void *dc = up(c0);
            ASSERT_EQ(dt_compute_matmul(gpu, DT_FLOAT32, DT_FLOAT32, ta, tb, m, n, k, 0.5f, up(a),
                                        up(b), 1.5f, dc), DT_OK) << dt_last_error();
            expect_close(down(dc, ref.size()), ref, "matmul");
        }
}

// The default: float32 convolutions on TF32 tensor cores (10-bit mantissa), as PyTorch.
class CudnnTf32 : public Cudnn {
protected:
    CudnnTf32() { tf32_ = true; }
};

int tf32_convolutions(dt_compute_h c)
{
    dt_compute_attr_t a{};
    a.field_mask = DT_COMPUTE_ATTR_FIELD_TF32_CONVOLUTIONS;
    a.tf32_convolutions = -1;
    EXPECT_EQ(dt_compute_query(c, &a), DT_OK) << dt_last_error();
    return a.tf32_convolutions;
}

// The attribute a model picks its layout by (NHWC on tensor cores, NCHW without them).
TEST_F(CudnnTf32, TheContextSaysItsConvolutionsRunInTf32)
{
    EXPECT_EQ(tf32_convolutions(gpu), 1);
    EXPECT_EQ(tf32_convolutions(cpu), 0); // oneDNN: float32 is float32
}

TEST_F(Cudnn, AStrictFloat32ContextSaysSo)
{
    EXPECT_EQ(tf32_convolutions(gpu), 0);
}

TEST_F(CudnnTf32, ConvolutionsAgreeToTf32Precision)
{
    dt_conv_params_t p{};
    p.field_mask = DT_CONV_PARAM_FIELD_PADDING;
    p.padding[0] = p.padding[1] = 1;
    dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 4, 16, 14, 14);
    dt_tensor_desc_t wd = dt_tensor_desc_4d(DT_FLOAT32, 32, 16, 3, 3);
    dt_tensor_desc_t yd = dt_tensor_desc_4d(DT_FLOAT32, 4, 32, 14, 14);
    auto x = random_vector(4 * 16 * 196, 11), w = random_vector(32 * 16 * 9, 12);
    std::vector<float> y(4 * 32 * 196);
    ASSERT_EQ(dt_compute_conv_forward(cpu, &p, &xd, x.data(), &wd, w.data(), nullptr, nullptr,
                                      &yd, y.data()), DT_OK);
    void *gy = up(y);
    ASSERT_EQ(dt_compute_conv_forward(gpu, &p, &xd, up(x), &wd, up(w), nullptr, nullptr, &yd,
                                      gy), DT_OK) << dt_last_error();
    expect_close(down(gy, y.size()), y, "tf32 conv y", 2e-2);
}

TEST_F(Cudnn, ConvolutionPoolingBatchNorm)
{
    dt_conv_params_t p{};
    p.field_mask = DT_CONV_PARAM_FIELD_STRIDE | DT_CONV_PARAM_FIELD_PADDING;
    p.stride[0] = p.stride[1] = 2;
    p.padding[0] = p.padding[1] = 1;
    dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 2, 3, 9, 9);
    dt_tensor_desc_t wd = dt_tensor_desc_4d(DT_FLOAT32, 4, 3, 3, 3);
    dt_tensor_desc_t yd = dt_tensor_desc_4d(DT_FLOAT32, 2, 4, 5, 5);
    dt_tensor_desc_t bd = dt_tensor_desc_1d(DT_FLOAT32, 4);
    auto x = random_vector(2 * 3 * 81, 4), w = random_vector(4 * 27, 5), b = random_vector(4, 6);
    auto dy = random_vector(2 * 4 * 25, 7);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(4);
    ASSERT_NO_FATAL_FAILURE(conv_all(cpu, {p, xd, wd, yd, &bd}, x.data(), w.data(), b.data(),
                                     y.data(), dy.data(), dx.data(), dw.data(), db.data()));
    void *gx = up(x), *gw = up(w), *gb = up(b), *gdy = up(dy), *gy = up(y), *gdx = up(dx),
         *gdw = up(dw), *gdb = up(db);
    ASSERT_NO_FATAL_FAILURE(conv_all(gpu, {p, xd, wd, yd, &bd}, gx, gw, gb, gy, gdy, gdx, gdw,
                                     gdb));
    expect_close(down(gy, y.size()), y, "conv y");
    expect_close(down(gdx, dx.size()), dx, "conv dx");
    expect_close(down(gdw, dw.size()), dw, "conv dw", 1e-3);
    expect_close(down(gdb, db.size()), db, "conv db", 1e-3);

    dt_pool_params_t pp{};
    pp.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL;
    pp.kind = DT_POOL_MAX;
    pp.kernel[0] = pp.kernel[1] = 3;
    dt_tensor_desc_t pd = dt_tensor_desc_4d(DT_FLOAT32, 2, 3, 3, 3);
    std::vector<float> py, pdy = random_vector(54, 8), pdx;
    ASSERT_NO_FATAL_FAILURE(reference_pool(cpu, pp, xd, x, pd, pdy, &py, &pdx));
    void *gpy = up(py), *gpdx = up(pdx);
    ASSERT_EQ(dt_compute_pool_forward(gpu, &pp, &xd, gx, &pd, gpy, nullptr), DT_OK);
    ASSERT_EQ(dt_compute_pool_backward(gpu, &pp, &xd, gx, &pd, gpy, up(pdy), gpdx, nullptr),
              DT_OK) << dt_last_error();
    expect_close(down(gpy, py.size()), py, "pool y");
    expect_close(down(gpdx, pdx.size()), pdx, "pool dx");

    auto scale = random_vector(3, 9), shift = random_vector(3, 10);
    auto ndy = random_vector(x.size(), 11);
    Norm<std::vector<float>> want;
    ASSERT_NO_FATAL_FAILURE(reference_batchnorm(cpu, xd, x, scale, shift, ndy, want));
    auto upload = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)); };
    float *gs = upload(scale), *gsh = upload(shift);
    Norm<float *> got = norm_buffers(upload, x.size(), 3);
    ASSERT_NO_FATAL_FAILURE(batchnorm_both_ways(gpu, xd, gx, gs, gsh, up(ndy), got));
    expect_close(down(got.y, x.size()), want.y, "bn y", 1e-3);
    expect_close(down(got.invstd, 3), want.invstd, "bn invstd", 1e-3);
    expect_close(down(got.running_var, 3), want.running_var, "bn running var", 1e-3);
    expect_close(down(got.dx, x.size()), want.dx, "bn dx", 1e-3);
    expect_close(down(got.dscale, 3), want.dscale, "bn dscale", 1e-3);
}

// (n, c, h, w) to (n, h, w, c), or back with to_channels_last false.
std::vector<float> relayout(const std::vector<float> &v, int n, int c, int h, int w,
                            bool to_channels_last)
{
    std::vector<float> out(v.size());
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < c; ++k)
            for (int p = 0; p < h * w; ++p) {
                const size_t nchw = (size_t(i) * c + k) * h * w + p;
                const size_t nhwc = (size_t(i) * h * w + p) * c + k;
                if (to_channels_last)
                    out[nhwc] = v[nchw];
                else
                    out[nchw] = v[nhwc];
            }
    return out;
}

// Channels-last activations (DT_LAYOUT_NHWC) give the NCHW results, transposed: the
// convolution with its channels-last copy of the filter and the filter gradient brought
// back to (K, C, R, S), its bias in both directions, max pooling, and batch norm on the
// (N * H * W, C) view that models pass for channels-last activations.
TEST_F(Cudnn, ChannelsLastConvolutionAndPooling)
{
    dt_conv_params_t p{};
    p.field_mask = DT_CONV_PARAM_FIELD_STRIDE | DT_CONV_PARAM_FIELD_PADDING;
    p.stride[0] = p.stride[1] = 2;
    p.padding[0] = p.padding[1] = 1;
    dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 2, 8, 9, 9);
    dt_tensor_desc_t wd = dt_tensor_desc_4d(DT_FLOAT32, 16, 8, 3, 3);
    dt_tensor_desc_t yd = dt_tensor_desc_4d(DT_FLOAT32, 2, 16, 5, 5);
    dt_tensor_desc_t bd = dt_tensor_desc_1d(DT_FLOAT32, 16);
    auto x = random_vector(2 * 8 * 81, 21), w = random_vector(16 * 8 * 9, 22);
    auto b = random_vector(16, 23), dy = random_vector(2 * 16 * 25, 24);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(16);
    ASSERT_NO_FATAL_FAILURE(conv_all(cpu, {p, xd, wd, yd, &bd}, x.data(), w.data(), b.data(),
                                     y.data(), dy.data(), dx.data(), dw.data(), db.data()));

    dt_conv_params_t pl = p;
    pl.field_mask |= DT_CONV_PARAM_FIELD_LAYOUT;
    pl.layout = DT_LAYOUT_NHWC;
    dt_tensor_desc_t xl = dt_tensor_desc_4d(DT_FLOAT32, 2, 9, 9, 8);
    dt_tensor_desc_t yl = dt_tensor_desc_4d(DT_FLOAT32, 2, 5, 5, 16);
    void *gx = up(relayout(x, 2, 8, 9, 9, true)), *gw = up(w), *gb = up(b);
    void *gdy = up(relayout(dy, 2, 16, 5, 5, true)), *gy = up(y), *gdx = up(dx);
    void *gdw = up(dw), *gdb = up(db);
    ASSERT_NO_FATAL_FAILURE(conv_all(gpu, {pl, xl, wd, yl, &bd}, gx, gw, gb, gy, gdy, gdx, gdw,
                                     gdb));
    expect_close(relayout(down(gy, y.size()), 2, 16, 5, 5, false), y, "nhwc conv y");
    expect_close(relayout(down(gdx, dx.size()), 2, 8, 9, 9, false), dx, "nhwc conv dx");
    expect_close(down(gdw, dw.size()), dw, "nhwc conv dw", 1e-3);
    expect_close(down(gdb, db.size()), db, "nhwc conv db", 1e-3);

    dt_pool_params_t pp{};
    pp.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL;
    pp.kind = DT_POOL_MAX;
    pp.kernel[0] = pp.kernel[1] = 3;
    dt_tensor_desc_t pd = dt_tensor_desc_4d(DT_FLOAT32, 2, 8, 3, 3);
    std::vector<float> py, pdy = random_vector(2 * 8 * 9, 25), pdx;
    ASSERT_NO_FATAL_FAILURE(reference_pool(cpu, pp, xd, x, pd, pdy, &py, &pdx));
    dt_pool_params_t ppl = pp;
    ppl.field_mask |= DT_POOL_PARAM_FIELD_LAYOUT;
    ppl.layout = DT_LAYOUT_NHWC;
    dt_tensor_desc_t pl_d = dt_tensor_desc_4d(DT_FLOAT32, 2, 3, 3, 8);
    void *gpy = up(py), *gpdx = up(pdx);
    ASSERT_EQ(dt_compute_pool_forward(gpu, &ppl, &xl, gx, &pl_d, gpy, nullptr), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_pool_backward(gpu, &ppl, &xl, gx, &pl_d, gpy,
                                       up(relayout(pdy, 2, 8, 3, 3, true)), gpdx, nullptr),
              DT_OK) << dt_last_error();
    expect_close(relayout(down(gpy, py.size()), 2, 8, 3, 3, false), py, "nhwc pool y");
    expect_close(relayout(down(gpdx, pdx.size()), 2, 8, 9, 9, false), pdx, "nhwc pool dx");

    // Batch norm of channels-last activations through their (N * H * W, C) view.
    auto scale = random_vector(8, 26), shift = random_vector(8, 27);
    auto ndy = random_vector(x.size(), 28);
    Norm<std::vector<float>> want;
    ASSERT_NO_FATAL_FAILURE(reference_batchnorm(cpu, xd, x, scale, shift, ndy, want));
    dt_tensor_desc_t rows = dt_tensor_desc_2d(DT_FLOAT32, 2 * 81, 8);
    auto upload = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)); };
    float *gs = upload(scale), *gsh = upload(shift);
    Norm<float *> got = norm_buffers(upload, x.size(), 8);
    ASSERT_NO_FATAL_FAILURE(batchnorm_both_ways(gpu, rows, gx, gs, gsh,
                                                up(relayout(ndy, 2, 8, 9, 9, true)), got));
    expect_close(relayout(down(got.y, x.size()), 2, 8, 9, 9, false), want.y, "nhwc bn y", 1e-3);
    expect_close(down(got.running_var, 8), want.running_var, "nhwc bn running var", 1e-3);
    expect_close(relayout(down(got.dx, x.size()), 2, 8, 9, 9, false), want.dx, "nhwc bn dx",
                 1e-3);
    expect_close(down(got.dscale, 8), want.dscale, "nhwc bn dscale", 1e-3);
    expect_close(down(got.dshift, 8), want.dshift, "nhwc bn dshift", 1e-3);
}

// ReLU, its gradient and add, exact in float32: on aligned arrays (four elements per
// access, and an odd length for the tail) and one element off alignment (one by one).
TEST_F(Cudnn, ElementwiseAlignedAndNot)
{
    const int n = 1003;
    auto a = random_vector(n + 1, 31), b = random_vector(n + 1, 32);
    for (int offset = 0; offset < 2; ++offset) {
        dt_tensor_desc_t d = dt_tensor_desc_1d(DT_FLOAT32, n);
        auto at = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)) + offset; };
        float *ga = at(a), *gb = at(b), *gy = at(a), *gdx = at(a), *gsum = at(a);
        ASSERT_EQ(dt_compute_relu_forward(gpu, &d, ga, gy), DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_relu_backward(gpu, &d, ga, gb, gdx), DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_add(gpu, &d, ga, gb, gsum), DT_OK) << dt_last_error();
        std::vector<float> y(n + 1), dx(n + 1), sum(n + 1);
        ASSERT_EQ(dt_compute_memcpy(gpu, y.data(), gy, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        ASSERT_EQ(dt_compute_memcpy(gpu, dx.data(), gdx, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        ASSERT_EQ(dt_compute_memcpy(gpu, sum.data(), gsum, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        for (int i = 0; i < n; ++i) {
            const float x = a[i + offset], g = b[i + offset];
            ASSERT_EQ(y[i], x > 0 ? x : 0.0f) << "relu at offset " << offset << ", " << i;
            ASSERT_EQ(dx[i], x > 0 ? g : 0.0f) << "relu grad at offset " << offset << ", " << i;
            ASSERT_EQ(sum[i], x + g) << "add at offset " << offset << ", " << i;
        }
    }
}

// The fused add + ReLU kernel against add then ReLU on the GPU: float32 on aligned
// pointers (four per access) and off by one element (one by one), bfloat16.
TEST_F(CudnnBf16, AddReluMatchesAddThenRelu)
{
    const int n = 1003;
    auto a = random_vector(n + 1, 41), b = random_vector(n + 1, 42);
    for (int offset = 0; offset < 2; ++offset) {
        const dt_tensor_desc_t d = dt_tensor_desc_1d(DT_FLOAT32, n);
        auto at = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)) + offset; };
        float *ga = at(a), *gb = at(b), *fused = at(a), *plain = at(a);
        ASSERT_EQ(dt_compute_add_relu(gpu, &d, ga, gb, fused), DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_add(gpu, &d, ga, gb, plain), DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_relu_forward(gpu, &d, plain, plain), DT_OK) << dt_last_error();
        std::vector<float> f(n), p(n);
        ASSERT_EQ(dt_compute_memcpy(gpu, f.data(), fused, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        ASSERT_EQ(dt_compute_memcpy(gpu, p.data(), plain, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        EXPECT_TRUE(f == p) << "float32 at offset " << offset;
        EXPECT_GT(std::count(f.begin(), f.end(), 0.0f), 0);
    }
    std::vector<float> a16 = random_vector(n, 43), b16 = random_vector(n, 44);
    void *ha = bf16(a16), *hb = bf16(b16), *fused = zeros16(n), *plain = zeros16(n);
    const dt_tensor_desc_t d = dt_tensor_desc_1d(DT_BFLOAT16, n);
    ASSERT_EQ(dt_compute_add_relu(gpu, &d, ha, hb, fused), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_add(gpu, &d, ha, hb, plain), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(gpu, &d, plain, plain), DT_OK) << dt_last_error();
    EXPECT_TRUE(down16(fused, n) == down16(plain, n)) << "bfloat16";
}

// The ReLU gradient of a sum against add then ReLU gradient on the GPU, as above.
TEST_F(CudnnBf16, ReluBackwardOfASumMatchesAddThenReluBackward)
{
    const int n = 1003;
    auto y = random_vector(n + 1, 45), a = random_vector(n + 1, 46), b = random_vector(n + 1, 47);
    for (int offset = 0; offset < 2; ++offset) {
        const dt_tensor_desc_t d = dt_tensor_desc_1d(DT_FLOAT32, n);
        auto at = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)) + offset; };
        float *gy = at(y), *ga = at(a), *gb = at(b), *fused = at(a), *plain = at(a);
        ASSERT_EQ(dt_compute_relu_backward_sum(gpu, &d, gy, ga, gb, fused), DT_OK)
            << dt_last_error();
        ASSERT_EQ(dt_compute_add(gpu, &d, ga, gb, plain), DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_relu_backward(gpu, &d, gy, plain, plain), DT_OK) << dt_last_error();
        std::vector<float> f(n), p(n);
        ASSERT_EQ(dt_compute_memcpy(gpu, f.data(), fused, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        ASSERT_EQ(dt_compute_memcpy(gpu, p.data(), plain, n * 4, DT_COPY_DEVICE_TO_HOST), DT_OK);
        EXPECT_TRUE(f == p) << "float32 at offset " << offset;
        EXPECT_GT(std::count(f.begin(), f.end(), 0.0f), 0);
    }
    std::vector<float> y16 = random_vector(n, 48), a16 = random_vector(n, 49),
                       b16 = random_vector(n, 50);
    void *hy = bf16(y16), *ha = bf16(a16), *hb = bf16(b16), *fused = zeros16(n),
         *plain = zeros16(n);
    const dt_tensor_desc_t d = dt_tensor_desc_1d(DT_BFLOAT16, n);
    ASSERT_EQ(dt_compute_relu_backward_sum(gpu, &d, hy, ha, hb, fused), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_add(gpu, &d, ha, hb, plain), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_relu_backward(gpu, &d, hy, plain, plain), DT_OK) << dt_last_error();
    EXPECT_TRUE(down16(fused, n) == down16(plain, n)) << "bfloat16";
}

// bfloat16 activations with float32 weights and per-channel vectors (compute.h's mixed
// precision) against float32 on the same GPU and the same (bfloat16-exact) inputs, within
// bfloat16's precision: convolution in its three directions in both layouts (the filter
// converted, and its gradient converted back), batch norm in both shapes (the plugin's own
// kernels by default; cudnn_batchnorm_test.cc checks them and cuDNN's against oneDNN),
// max pooling and ReLU.
TEST_F(CudnnBf16, ActivationsWithFloat32Weights)
{
    for (const dt_tensor_layout_t layout : {DT_LAYOUT_NCHW, DT_LAYOUT_NHWC}) {
        const bool last = layout == DT_LAYOUT_NHWC;
        dt_conv_params_t p{};
        p.field_mask = DT_CONV_PARAM_FIELD_PADDING | DT_CONV_PARAM_FIELD_LAYOUT;
        p.padding[0] = p.padding[1] = 1;
        p.layout = layout;
        auto act = [&](dt_dtype_t t, int64_t n, int64_t c, int64_t h, int64_t w) {
            return last ? dt_tensor_desc_4d(t, n, h, w, c) : dt_tensor_desc_4d(t, n, c, h, w);
        };
        const auto x32d = act(DT_FLOAT32, 2, 16, 9, 9), x16d = act(DT_BFLOAT16, 2, 16, 9, 9);
        const auto y32d = act(DT_FLOAT32, 2, 32, 9, 9), y16d = act(DT_BFLOAT16, 2, 32, 9, 9);
        const auto wd = dt_tensor_desc_4d(DT_FLOAT32, 32, 16, 3, 3);
        auto x = random_vector(2 * 16 * 81, 41), dy = random_vector(2 * 32 * 81, 42);
        auto w = random_vector(32 * 16 * 9, 43);
        void *x16 = bf16(x), *dy16 = bf16(dy), *gw = up(w);
        void *x32 = up(x), *dy32 = up(dy);
        void *y16 = zeros16(dy.size()), *dx16 = zeros16(x.size()), *dw = up(w);
        void *y32 = up(dy), *dx32 = up(x), *dw32 = up(w);
        const auto bd = dt_tensor_desc_1d(DT_FLOAT32, 32);
        const auto b = random_vector(32, 50);
        void *gb = up(b), *db16 = up(b), *db32 = up(b);
        ASSERT_NO_FATAL_FAILURE(conv_all(gpu, {p, x16d, wd, y16d, &bd}, x16, gw, gb, y16, dy16,
                                         dx16, dw, db16));
        ASSERT_NO_FATAL_FAILURE(conv_all(gpu, {p, x32d, wd, y32d, &bd}, x32, gw, gb, y32, dy32,
                                         dx32, dw32, db32));
        expect_near_l2(down16(y16, dy.size()), down(y32, dy.size()), last ? "nhwc y" : "y");
        expect_near_l2(down16(dx16, x.size()), down(dx32, x.size()), last ? "nhwc dx" : "dx");
        expect_near_l2(down(dw, w.size()), down(dw32, w.size()), last ? "nhwc dw" : "dw");
        expect_near_l2(down(db16, 32), down(db32, 32), last ? "nhwc db" : "db");
    }

    // Batch norm on (N, C, H, W) and on a (rows, C) view, forward and backward.
    for (const bool rows : {false, true}) {
        const auto d32 = rows ? dt_tensor_desc_2d(DT_FLOAT32, 2 * 81, 8)
                              : dt_tensor_desc_4d(DT_FLOAT32, 2, 8, 9, 9);
        auto d16 = d32;
        d16.dtype = DT_BFLOAT16;
        auto x = random_vector(2 * 8 * 81, 44), dy = random_vector(x.size(), 45);
        auto scale = random_vector(8, 46), shift = random_vector(8, 47);
        auto upload = [&](const std::vector<float> &v) { return static_cast<float *>(up(v)); };
        float *gs = upload(scale), *gsh = upload(shift);
        // The float buffers hold bfloat16 y and dx too (half their size, zero bits alike).
        Norm<float *> b16 = norm_buffers(upload, x.size(), 8);
        Norm<float *> f32 = norm_buffers(upload, x.size(), 8);
        ASSERT_NO_FATAL_FAILURE(batchnorm_both_ways(gpu, d16, bf16(x), gs, gsh, bf16(dy), b16));
        ASSERT_NO_FATAL_FAILURE(batchnorm_both_ways(gpu, d32, up(x), gs, gsh, up(dy), f32));
        expect_near_l2(down16(b16.y, x.size()), down(f32.y, x.size()), "bn y");
        expect_near_l2(down16(b16.dx, x.size()), down(f32.dx, x.size()), "bn dx");
        expect_near_l2(down(b16.running_var, 8), down(f32.running_var, 8), "bn running var");
        expect_near_l2(down(b16.dscale, 8), down(f32.dscale, 8), "bn dscale");
        expect_near_l2(down(b16.dshift, 8), down(f32.dshift, 8), "bn dshift");
    }

    // Max pooling and ReLU.
    dt_pool_params_t pp{};
    pp.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL;
    pp.kind = DT_POOL_MAX;
    pp.kernel[0] = pp.kernel[1] = 3;
    const auto px16 = dt_tensor_desc_4d(DT_BFLOAT16, 2, 4, 9, 9);
    const auto py16 = dt_tensor_desc_4d(DT_BFLOAT16, 2, 4, 3, 3);
    auto x = random_vector(2 * 4 * 81, 48), dy = random_vector(2 * 4 * 9, 49);
    void *x16 = bf16(x), *dy16 = bf16(dy), *y16 = zeros16(dy.size()), *dx16 = zeros16(x.size());
    ASSERT_EQ(dt_compute_pool_forward(gpu, &pp, &px16, x16, &py16, y16, nullptr), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_pool_backward(gpu, &pp, &px16, x16, &py16, y16, dy16, dx16, nullptr),
              DT_OK) << dt_last_error();
    const auto py = down16(y16, dy.size()), pdx = down16(dx16, x.size());
    for (int plane = 0; plane < 8; ++plane) // every 3x3 window's maximum, taken exactly
        for (int wy = 0; wy < 3; ++wy)
            for (int wx = 0; wx < 3; ++wx) {
                float best = -1e30f;
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j)
                        best = std::max(best, x[plane * 81 + (wy * 3 + i) * 9 + wx * 3 + j]);
                ASSERT_EQ(py[plane * 9 + wy * 3 + wx], best) << "bf16 max pool";
            }
    double routed = 0, given = 0; // max pooling's gradient moves dy, it does not change it
    for (float v : pdx)
        routed += v;
    for (float v : dy)
        given += v;
    EXPECT_NEAR(routed, given, 1e-2 * (1 + std::fabs(given))) << "bf16 max pool gradient";
    const auto rd = dt_tensor_desc_1d(DT_BFLOAT16, int64_t(x.size()));
    void *r16 = zeros16(x.size());
    ASSERT_EQ(dt_compute_relu_forward(gpu, &rd, x16, r16), DT_OK) << dt_last_error();
    const auto r = down16(r16, x.size());
    for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(r[i], x[i] > 0 ? x[i] : 0.0f) << "bf16 relu " << i;
}

TEST_F(Cudnn, LossOptimizersAndCasts)
{
    dt_tensor_desc_t ld = dt_tensor_desc_2d(DT_FLOAT32, 8, 10);
    auto logits = random_vector(80, 12, -3.0f, 3.0f);
    std::vector<int32_t> labels{0, 1, 2, 3, 4, 5, 6, 9};
    std::vector<float> probs(80), dl(80);
    float loss = 0;
    int64_t hits = 0;
    ASSERT_EQ(dt_compute_softmax_cross_entropy_forward(cpu, &ld, logits.data(), labels.data(),
                                                       probs.data(), &loss, &hits), DT_OK);
    ASSERT_EQ(dt_compute_softmax_cross_entropy_backward(cpu, &ld, probs.data(), labels.data(),
                                                        0.125f, dl.data()), DT_OK);
    void *gp = up(probs), *gdl = up(dl);
    auto *glabels = static_cast<int32_t *>(up(labels));
    float gloss = 0;
    int64_t ghits = 0;
    ASSERT_EQ(dt_compute_softmax_cross_entropy_forward(gpu, &ld, up(logits), glabels, gp, &gloss,
                                                       &ghits), DT_OK) << dt_last_error();
    EXPECT_NEAR(gloss, loss, 1e-5);
    EXPECT_EQ(ghits, hits);
    ASSERT_EQ(dt_compute_softmax_cross_entropy_backward(gpu, &ld, gp, glabels, 0.125f, gdl), DT_OK);
    expect_close(down(gdl, 80), dl, "dlogits");

    auto w = random_vector(1000, 13), g = random_vector(1000, 14);
    std::vector<float> buf(1000, 0.0f), m(1000, 0.0f), v(1000, 0.0f);
    void *gw = up(w), *gg = up(g), *gbuf = up(buf), *gm = up(m), *gv = up(v);
    dt_sgd_params_t s{0.1f, 0.9f, 1e-4f, 1};
    dt_adam_params_t a{1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 1, 1};
    for (int step = 0; step < 2; ++step) {
        ASSERT_EQ(dt_compute_sgd_update(cpu, &s, 1000, w.data(), g.data(), buf.data()), DT_OK);
        ASSERT_EQ(dt_compute_sgd_update(gpu, &s, 1000, static_cast<float *>(gw),
                                        static_cast<float *>(gg), static_cast<float *>(gbuf)),
                  DT_OK);
        a.step = step + 1;
        ASSERT_EQ(dt_compute_adam_update(cpu, &a, 1000, w.data(), g.data(), m.data(), v.data()),
                  DT_OK);
        ASSERT_EQ(dt_compute_adam_update(gpu, &a, 1000, static_cast<float *>(gw),
                                         static_cast<float *>(gg), static_cast<float *>(gm),
                                         static_cast<float *>(gv)), DT_OK);
    }
    expect_close(down(gw, 1000), w, "weights after sgd and adam", 1e-5);

    dt_tensor_desc_t cd = dt_tensor_desc_1d(DT_FLOAT32, 1000);
    std::vector<uint16_t> bf(1000), hf(1000);
    ASSERT_EQ(dt_compute_cast(cpu, &cd, g.data(), DT_BFLOAT16, bf.data()), DT_OK);
    ASSERT_EQ(dt_compute_cast(cpu, &cd, g.data(), DT_FLOAT16, hf.data()), DT_OK);
    void *gbf = up(std::vector<uint16_t>(1000)), *ghf = up(std::vector<uint16_t>(1000));
    ASSERT_EQ(dt_compute_cast(gpu, &cd, gg, DT_BFLOAT16, gbf), DT_OK);
    ASSERT_EQ(dt_compute_cast(gpu, &cd, gg, DT_FLOAT16, ghf), DT_OK);
    std::vector<uint16_t> hb(1000), hh(1000);
    ASSERT_EQ(dt_compute_memcpy(gpu, hb.data(), gbf, 2000, DT_COPY_DEVICE_TO_HOST), DT_OK);
    ASSERT_EQ(dt_compute_memcpy(gpu, hh.data(), ghf, 2000, DT_COPY_DEVICE_TO_HOST), DT_OK);
    EXPECT_EQ(hb, bf);
    EXPECT_EQ(hh, hf);
}

} // namespace
} // namespace dt::test

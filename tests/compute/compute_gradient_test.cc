// SPDX-License-Identifier: Apache-2.0
// Finite-difference checks of every backward operation of the compute API on the oneDNN
// plugin: L = sum(forward(x) * r) for a fixed random r, so dL/dx is backward(r).
#include "compute_test_util.h"

namespace dt::test {
namespace {

using Grad = ComputeFixture;

dt_tensor_desc_t d4(int64_t n, int64_t c, int64_t h, int64_t w)
{
    return dt_tensor_desc_4d(DT_FLOAT32, n, c, h, w);
}

TEST_F(Grad, MatmulTransposedProductsAreTheGradients)
{
    const int m = 4, n = 3, k = 5;
    auto a = random_vector(m * k, 1), b = random_vector(k * n, 2), r = random_vector(m * n, 3);
    std::vector<float> out(m * n), da(m * k), db(k * n);
    auto loss = [&] {
        EXPECT_EQ(dt_compute_matmul(c, DT_FLOAT32, DT_FLOAT32, 0, 0, m, n, k, 1.0f, a.data(),
                                    b.data(), 0.0f, out.data()), DT_OK) << dt_last_error();
        return dot(out, r);
    };
    // dA = R * B^T, dB = A^T * R.
    ASSERT_EQ(dt_compute_matmul(c, DT_FLOAT32, DT_FLOAT32, 0, 1, m, k, n, 1.0f, r.data(),
                                b.data(), 0.0f, da.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_matmul(c, DT_FLOAT32, DT_FLOAT32, 1, 0, k, n, m, 1.0f, a.data(),
                                r.data(), 0.0f, db.data()), DT_OK) << dt_last_error();
    expect_gradient(a, loss, da, "dA");
    expect_gradient(b, loss, db, "dB");
}

struct ConvCase {
    int stride, padding, dilation, groups;
};

class ConvGrad : public ComputeFixture, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ConvGrad, DataWeightsAndBias)
{
    const ConvCase cc = GetParam();
    dt_conv_params_t p{};
    p.field_mask = DT_CONV_PARAM_FIELD_STRIDE | DT_CONV_PARAM_FIELD_PADDING |
                   DT_CONV_PARAM_FIELD_DILATION | DT_CONV_PARAM_FIELD_GROUPS;
    p.stride[0] = p.stride[1] = cc.stride;
    p.padding[0] = p.padding[1] = cc.padding;
    p.dilation[0] = p.dilation[1] = cc.dilation;
    p.groups = cc.groups;
    const int n = 2, ci = 4, h = 7, w = 6, co = 4, kk = 3;
    const int oh = (h + 2 * cc.padding - cc.dilation * (kk - 1) - 1) / cc.stride + 1;
    const int ow = (w + 2 * cc.padding - cc.dilation * (kk - 1) - 1) / cc.stride + 1;
    dt_tensor_desc_t xd = d4(n, ci, h, w), wd = d4(co, ci / cc.groups, kk, kk),
                     yd = d4(n, co, oh, ow), bd = dt_tensor_desc_1d(DT_FLOAT32, co);
    auto x = random_vector(n * ci * h * w, 4), wt = random_vector(co * ci / cc.groups * kk * kk, 5);
    auto bias = random_vector(co, 6), r = random_vector(n * co * oh * ow, 7);
    std::vector<float> y(r.size()), dx(x.size()), dw(wt.size()), db(co);
    auto loss = [&] {
        EXPECT_EQ(dt_compute_conv_forward(c, &p, &xd, x.data(), &wd, wt.data(), &bd, bias.data(),
                                          &yd, y.data()), DT_OK) << dt_last_error();
        return dot(y, r);
    };
    ASSERT_EQ(dt_compute_conv_backward_data(c, &p, &wd, wt.data(), &yd, r.data(), &xd,
                                            dx.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_conv_backward_weights(c, &p, &xd, x.data(), &yd, r.data(), &wd,
                                               dw.data(), &bd, db.data()), DT_OK)
        << dt_last_error();
    expect_gradient(x, loss, dx, "dx");
    expect_gradient(wt, loss, dw, "dw");
    expect_gradient(bias, loss, db, "dbias");
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvGrad,
                         ::testing::Values(ConvCase{1, 0, 1, 1}, ConvCase{2, 1, 1, 1},
                                           ConvCase{1, 2, 2, 1}, ConvCase{1, 1, 1, 2}));

class PoolGrad : public ComputeFixture, public ::testing::WithParamInterface<dt_pool_kind_t> {};

TEST_P(PoolGrad, Backward)
{
    dt_pool_params_t p{};
    p.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL |
                   DT_POOL_PARAM_FIELD_STRIDE | DT_POOL_PARAM_FIELD_PADDING;
    p.kind = GetParam();
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    p.padding[0] = p.padding[1] = 1;
    dt_tensor_desc_t xd = d4(2, 2, 6, 7), yd = d4(2, 2, 3, 4);
    // Distinct values 0.05 apart so that a perturbation of 0.01 never changes an argmax.
    std::vector<float> x(2 * 2 * 6 * 7);
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.05f * static_cast<float>((i * 37) % x.size()) - 1.0f;
    auto r = random_vector(2 * 2 * 3 * 4, 8);
    std::vector<float> y(r.size()), dx(x.size());
    size_t ws_bytes = 0;
    ASSERT_EQ(dt_compute_pool_workspace_size(c, &p, &xd, &yd, &ws_bytes), DT_OK);
    std::vector<unsigned char> ws(std::max<size_t>(ws_bytes, 1));
    void *wsp = ws_bytes ? ws.data() : nullptr;
    auto loss = [&] {
        EXPECT_EQ(dt_compute_pool_forward(c, &p, &xd, x.data(), &yd, y.data(), wsp), DT_OK)
            << dt_last_error();
        return dot(y, r);
    };
    loss();
    ASSERT_EQ(dt_compute_pool_backward(c, &p, &xd, x.data(), &yd, y.data(), r.data(), dx.data(),
                                       wsp), DT_OK) << dt_last_error();
    expect_gradient(x, loss, dx, "dx");
}

INSTANTIATE_TEST_SUITE_P(Kinds, PoolGrad,
                         ::testing::Values(DT_POOL_MAX, DT_POOL_AVG_INCLUDE_PADDING,
                                           DT_POOL_AVG_EXCLUDE_PADDING));

TEST_F(Grad, BatchNormBackward)
{
    const int n = 3, ch = 2, h = 2, w = 3;
    dt_tensor_desc_t xd = d4(n, ch, h, w);
    auto x = random_vector(n * ch * h * w, 9, -2.0f, 2.0f), r = random_vector(x.size(), 10);
    auto scale = random_vector(ch, 11, 0.5f, 1.5f), shift = random_vector(ch, 12);
    std::vector<float> y(x.size()), mean(ch), invstd(ch), dx(x.size()), dscale(ch), dshift(ch);
    const float eps = 1e-5f;
    auto loss = [&] {
        EXPECT_EQ(dt_compute_batchnorm_forward_training(c, &xd, x.data(), scale.data(),
                                                        shift.data(), eps, 0.1f, y.data(),
                                                        mean.data(), invstd.data(), nullptr,
                                                        nullptr), DT_OK) << dt_last_error();
        return dot(y, r);
    };
    loss();
    ASSERT_EQ(dt_compute_batchnorm_backward(c, &xd, x.data(), r.data(), scale.data(), mean.data(),
                                            invstd.data(), eps, dx.data(), dscale.data(),
                                            dshift.data()), DT_OK) << dt_last_error();
    expect_gradient(x, loss, dx, "dx", 1e-3f, 3e-2);
    expect_gradient(scale, loss, dscale, "dscale", 1e-3f);
    expect_gradient(shift, loss, dshift, "dshift", 1e-3f);
}

TEST_F(Grad, ReluBiasAndSoftmaxCrossEntropy)
{
    dt_tensor_desc_t xd = dt_tensor_desc_2d(DT_FLOAT32, 4, 6);
    auto x = random_vector(24, 13), r = random_vector(24, 14);
    for (auto &v : x) // away from the kink, where the derivative is not defined
        v += v > 0 ? 0.1f : -0.1f;
    std::vector<float> y(24), dx(24);
    auto relu_loss = [&] {
        EXPECT_EQ(dt_compute_relu_forward(c, &xd, x.data(), y.data()), DT_OK);
        return dot(y, r);
    };
    ASSERT_EQ(dt_compute_relu_backward(c, &xd, x.data(), r.data(), dx.data()), DT_OK);
    expect_gradient(x, relu_loss, dx, "relu dx");

    dt_tensor_desc_t bd = dt_tensor_desc_1d(DT_FLOAT32, 6);
    auto bias = random_vector(6, 15);
    std::vector<float> db(6);
    auto bias_loss = [&] {
        std::vector<float> out = x;
        EXPECT_EQ(dt_compute_bias_add(c, &xd, out.data(), &bd, bias.data()), DT_OK);
        return dot(out, r);
    };
    ASSERT_EQ(dt_compute_bias_backward(c, &xd, r.data(), &bd, db.data()), DT_OK);
    expect_gradient(bias, bias_loss, db, "dbias");

    std::vector<int32_t> labels{0, 5, 2, 2};
    std::vector<float> probs(24), dlogits(24);
    auto xent = [&] {
        float l = 0;
        EXPECT_EQ(dt_compute_softmax_cross_entropy_forward(c, &xd, x.data(), labels.data(),
                                                           probs.data(), &l, nullptr), DT_OK);
        return double(l);
    };
    xent();
    ASSERT_EQ(dt_compute_softmax_cross_entropy_backward(c, &xd, probs.data(), labels.data(),
                                                        0.25f, dlogits.data()), DT_OK);
    expect_gradient(x, xent, dlogits, "dlogits", 1e-2f, 1e-2);
}

} // namespace
} // namespace dt::test

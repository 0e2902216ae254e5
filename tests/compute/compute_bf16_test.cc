// SPDX-License-Identifier: Apache-2.0
// bfloat16 activations with float32 weights and per-channel vectors on the oneDNN plugin:
// each operation against the same operation in float32 on the same (bfloat16-rounded)
// inputs, within bfloat16's precision, and the dtype combinations the API refuses.
// Channels-last (the layout the ResNets train in on a CPU) and NCHW.
#include "compute_test_util.h"

#include <cstdint>
#include <string>

namespace dt::test {
namespace {

class Bf16 : public ComputeFixture {
protected:
    void SetUp() override
    {
        ComputeFixture::SetUp();
        dt_compute_attr_t a{};
        a.field_mask = DT_COMPUTE_ATTR_FIELD_BF16_NATIVE;
        ASSERT_EQ(dt_compute_query(c, &a), DT_OK) << dt_last_error();
        if (!a.bf16_native)
            GTEST_SKIP() << "this CPU has no native bfloat16 (AVX-512 BF16 or AMX)";
    }

    // v rounded to bfloat16 (what the network holds), and back to float32.
    std::vector<uint16_t> to_bf16(const std::vector<float> &v)
    {
        std::vector<uint16_t> out(v.size());
        const auto d = dt_tensor_desc_1d(DT_FLOAT32, int64_t(v.size()));
        EXPECT_EQ(dt_compute_cast(c, &d, v.data(), DT_BFLOAT16, out.data()), DT_OK)
            << dt_last_error();
        return out;
    }
    std::vector<float> to_f32(const std::vector<uint16_t> &v)
    {
        std::vector<float> out(v.size());
        const auto d = dt_tensor_desc_1d(DT_BFLOAT16, int64_t(v.size()));
        EXPECT_EQ(dt_compute_cast(c, &d, v.data(), DT_FLOAT32, out.data()), DT_OK)
            << dt_last_error();
        return out;
    }
    // The float32 values of random bfloat16 numbers.
    std::vector<float> rounded(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f)
    {
        return to_f32(to_bf16(random_vector(n, seed, lo, hi)));
    }
};

dt_tensor_desc_t with(dt_tensor_desc_t d, dt_dtype_t dtype)
{
    d.dtype = dtype;
    return d;
}

constexpr double kTol = 1e-2;

// The descriptor of an activation in `layout`: (n, c, h, w) or (n, h, w, c).
dt_tensor_desc_t act(dt_dtype_t t, int64_t n, int64_t ch, int64_t h, int64_t w,
                     dt_tensor_layout_t layout)
{
    return layout == DT_LAYOUT_NHWC ? dt_tensor_desc_4d(t, n, h, w, ch)
                                    : dt_tensor_desc_4d(t, n, ch, h, w);
}

struct ConvCase {
    int kernel, stride, padding;
    dt_tensor_layout_t layout;
};

class Bf16Conv : public Bf16, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(Bf16Conv, ForwardAndBothGradientsMatchFloat32)
{
    const ConvCase cc = GetParam();
    dt_conv_params_t p{};
    p.field_mask = DT_CONV_PARAM_FIELD_STRIDE | DT_CONV_PARAM_FIELD_PADDING |
                   DT_CONV_PARAM_FIELD_LAYOUT;
    p.stride[0] = p.stride[1] = cc.stride;
    p.padding[0] = p.padding[1] = cc.padding;
    p.layout = cc.layout;
    const int n = 2, ci = 32, h = 9, w = 8, co = 48, k = cc.kernel;
    const int oh = (h + 2 * cc.padding - k) / cc.stride + 1;
    const int ow = (w + 2 * cc.padding - k) / cc.stride + 1;
    const auto xd = act(DT_FLOAT32, n, ci, h, w, cc.layout);
    const auto yd = act(DT_FLOAT32, n, co, oh, ow, cc.layout);
    const auto wd = dt_tensor_desc_4d(DT_FLOAT32, co, ci, k, k);
    const auto bd = dt_tensor_desc_1d(DT_FLOAT32, co);
    const auto xb = with(xd, DT_BFLOAT16), yb = with(yd, DT_BFLOAT16);
    const auto x = rounded(size_t(n) * ci * h * w, 1), dy = rounded(size_t(n) * co * oh * ow, 2);
    const auto wt = random_vector(size_t(co) * ci * k * k, 3, -0.2f, 0.2f);
    const auto bias = random_vector(co, 4);

    std::vector<float> y(dy.size()), dx(x.size()), dw(wt.size()), db(co);
    ASSERT_EQ(dt_compute_conv_forward(c, &p, &xd, x.data(), &wd, wt.data(), &bd, bias.data(),
                                      &yd, y.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_conv_backward_data(c, &p, &wd, wt.data(), &yd, dy.data(), &xd,
                                            dx.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_conv_backward_weights(c, &p, &xd, x.data(), &yd, dy.data(), &wd,
                                               dw.data(), &bd, db.data()), DT_OK)
        << dt_last_error();

    const auto x16 = to_bf16(x), dy16 = to_bf16(dy);
    std::vector<uint16_t> y16(y.size()), dx16(dx.size());
    std::vector<float> dw_mixed(dw.size()), db_mixed(co);
    ASSERT_EQ(dt_compute_conv_forward(c, &p, &xb, x16.data(), &wd, wt.data(), &bd, bias.data(),
                                      &yb, y16.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_conv_backward_data(c, &p, &wd, wt.data(), &yb, dy16.data(), &xb,
                                            dx16.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_conv_backward_weights(c, &p, &xb, x16.data(), &yb, dy16.data(), &wd,
                                               dw_mixed.data(), &bd, db_mixed.data()), DT_OK)
        << dt_last_error();
    EXPECT_LT(relative_error(to_f32(y16), y), kTol);
    EXPECT_LT(relative_error(to_f32(dx16), dx), kTol);
    // The weight gradient is accumulated in float32 from exact bfloat16 inputs; a GPU
    // plugin's may come back rounded to bfloat16 once before it is widened (compute.h):
    // about 1.6e-3 on cuDNN.
    dt_compute_attr_t attr{};
    attr.field_mask = DT_COMPUTE_ATTR_FIELD_DEVICE_KIND;
    ASSERT_EQ(dt_compute_query(c, &attr), DT_OK);
    EXPECT_LT(relative_error(dw_mixed, dw),
              attr.device_kind == DT_COMPUTE_DEVICE_GPU ? 4e-3 : 1e-3);
    EXPECT_LT(relative_error(db_mixed, db), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16Conv,
    ::testing::Values(ConvCase{3, 1, 1, DT_LAYOUT_NHWC}, ConvCase{3, 2, 1, DT_LAYOUT_NHWC},
                      ConvCase{1, 1, 0, DT_LAYOUT_NHWC}, ConvCase{1, 2, 0, DT_LAYOUT_NHWC},
                      ConvCase{3, 1, 1, DT_LAYOUT_NCHW}));

TEST_F(Bf16, MismatchedConvDtypesAreRefusedByName)
{
    const auto xd = dt_tensor_desc_4d(DT_FLOAT32, 1, 4, 5, 5);
    const auto yd = dt_tensor_desc_4d(DT_FLOAT32, 1, 4, 3, 3);
    const auto wd = dt_tensor_desc_4d(DT_FLOAT32, 4, 4, 3, 3);
    std::vector<float> x(100), y(36), w(144);
    // float32 activations with bfloat16 weights: only the other way round is allowed.
    const auto wb = with(wd, DT_BFLOAT16);
    EXPECT_EQ(dt_compute_conv_forward(c, nullptr, &xd, x.data(), &wb, w.data(), nullptr,
                                      nullptr, &yd, y.data()), DT_ERR_INVALID_ARGUMENT);
    std::string msg = dt_last_error();
    EXPECT_NE(msg.find("w_desc is (4, 4, 3, 3) bfloat16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("x_desc is (1, 4, 5, 5) float32"), std::string::npos) << msg;
    // bfloat16 activations with float16 weights.
    const auto xb = with(xd, DT_BFLOAT16), yb = with(yd, DT_BFLOAT16);
    const auto wh = with(wd, DT_FLOAT16);
    EXPECT_EQ(dt_compute_conv_backward_weights(c, nullptr, &xb, x.data(), &yb, y.data(), &wh,
                                               w.data(), nullptr, nullptr),
              DT_ERR_INVALID_ARGUMENT);
    msg = dt_last_error();
    EXPECT_NE(msg.find("dw_desc is (4, 4, 3, 3) float16"), std::string::npos) << msg;
    // dx bfloat16 but dy float32.
    EXPECT_EQ(dt_compute_conv_backward_data(c, nullptr, &wd, w.data(), &yd, y.data(), &xb,
                                            x.data()), DT_ERR_INVALID_ARGUMENT);
    msg = dt_last_error();
    EXPECT_NE(msg.find("dy_desc is (1, 4, 3, 3) float32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bfloat16"), std::string::npos) << msg;
}

class Bf16Norm : public Bf16, public ::testing::WithParamInterface<bool> {};

// Channels-last batch norm is that of the (N * H * W, C) view (GetParam() true); NCHW
// goes through the per-plane loops.
TEST_P(Bf16Norm, TrainingInferenceAndBackwardMatchFloat32)
{
    const bool rows = GetParam();
    const int64_t n = 4, ch = 24, h = 5, w = 6;
    const auto xd = rows ? dt_tensor_desc_2d(DT_FLOAT32, n * h * w, ch)
                         : dt_tensor_desc_4d(DT_FLOAT32, n, ch, h, w);
    const auto xb = with(xd, DT_BFLOAT16);
    const size_t count = size_t(n * ch * h * w);
    // An offset larger than the spread, as after a ReLU: the pivot must keep the variance.
    const auto x = rounded(count, 5, 2.0f, 4.0f), dy = rounded(count, 6);
    const auto scale = random_vector(size_t(ch), 7, 0.5f, 1.5f), shift = random_vector(ch, 8);
    const float eps = 1e-5f, momentum = 0.1f;

    std::vector<float> y(count), mean(ch), invstd(ch), rm(ch, 0.0f), rv(ch, 1.0f);
    std::vector<float> dx(count), ds(ch), dsh(ch), yi(count);
    ASSERT_EQ(dt_compute_batchnorm_forward_training(c, &xd, x.data(), scale.data(), shift.data(),
                                                    eps, momentum, y.data(), mean.data(),
                                                    invstd.data(), rm.data(), rv.data()),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(c, &xd, x.data(), dy.data(), scale.data(),
                                            mean.data(), invstd.data(), eps, dx.data(),
                                            ds.data(), dsh.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(c, &xd, x.data(), scale.data(),
                                                     shift.data(), rm.data(), rv.data(), eps,
                                                     yi.data()), DT_OK) << dt_last_error();

    const auto x16 = to_bf16(x), dy16 = to_bf16(dy);
    std::vector<uint16_t> y16(count), dx16(count), yi16(count);
    std::vector<float> mean2(ch), invstd2(ch), rm2(ch, 0.0f), rv2(ch, 1.0f), ds2(ch), dsh2(ch);
    ASSERT_EQ(dt_compute_batchnorm_forward_training(c, &xb, x16.data(), scale.data(),
                                                    shift.data(), eps, momentum, y16.data(),
                                                    mean2.data(), invstd2.data(), rm2.data(),
                                                    rv2.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(c, &xb, x16.data(), dy16.data(), scale.data(),
                                            mean2.data(), invstd2.data(), eps, dx16.data(),
                                            ds2.data(), dsh2.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(c, &xb, x16.data(), scale.data(),
                                                     shift.data(), rm2.data(), rv2.data(), eps,
                                                     yi16.data()), DT_OK) << dt_last_error();
    // Same inputs, statistics in float32 or wider: they agree to float32 rounding.
    EXPECT_LT(relative_error(mean2, mean), 1e-5);
    EXPECT_LT(relative_error(invstd2, invstd), 1e-4);
    EXPECT_LT(relative_error(rm2, rm), 1e-5);
    EXPECT_LT(relative_error(rv2, rv), 1e-4);
    EXPECT_LT(relative_error(ds2, ds), 1e-4);
    EXPECT_LT(relative_error(dsh2, dsh), 1e-5);
    EXPECT_LT(relative_error(to_f32(y16), y), kTol);
    EXPECT_LT(relative_error(to_f32(yi16), yi), kTol);
    EXPECT_LT(relative_error(to_f32(dx16), dx), kTol);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Bf16Norm, ::testing::Values(true, false));

class Bf16Pool : public Bf16, public ::testing::WithParamInterface<dt_pool_kind_t> {};

TEST_P(Bf16Pool, ForwardAndBackwardMatchFloat32)
{
    dt_pool_params_t p{};
    p.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL |
                   DT_POOL_PARAM_FIELD_STRIDE | DT_POOL_PARAM_FIELD_PADDING |
                   DT_POOL_PARAM_FIELD_LAYOUT;
    p.kind = GetParam();
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    p.padding[0] = p.padding[1] = 1;
    p.layout = DT_LAYOUT_NHWC;
    const auto xd = act(DT_FLOAT32, 2, 16, 8, 7, DT_LAYOUT_NHWC);
    const auto yd = act(DT_FLOAT32, 2, 16, 4, 4, DT_LAYOUT_NHWC);
    const auto xb = with(xd, DT_BFLOAT16), yb = with(yd, DT_BFLOAT16);
    // Distinct bfloat16 values (multiples of 1/64 up to 2), so the argmax is the same.
    std::vector<float> x(2 * 16 * 8 * 7);
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = float((i * 37) % 128) / 64.0f;
    const auto dy = rounded(2 * 16 * 4 * 4, 9);
    auto run = [&](const dt_tensor_desc_t &xdesc, const void *xp, const dt_tensor_desc_t &ydesc,
                   void *yp, const void *dyp, void *dxp) {
        size_t bytes = 0;
        ASSERT_EQ(dt_compute_pool_workspace_size(c, &p, &xdesc, &ydesc, &bytes), DT_OK)
            << dt_last_error();
        std::vector<unsigned char> ws(std::max<size_t>(bytes, 1));
        void *wsp = bytes ? ws.data() : nullptr;
        ASSERT_EQ(dt_compute_pool_forward(c, &p, &xdesc, xp, &ydesc, yp, wsp), DT_OK)
            << dt_last_error();
        ASSERT_EQ(dt_compute_pool_backward(c, &p, &xdesc, xp, &ydesc, yp, dyp, dxp, wsp), DT_OK)
            << dt_last_error();
    };
    std::vector<float> y(dy.size()), dx(x.size());
    run(xd, x.data(), yd, y.data(), dy.data(), dx.data());
    const auto x16 = to_bf16(x), dy16 = to_bf16(dy);
    std::vector<uint16_t> y16(y.size()), dx16(dx.size());
    run(xb, x16.data(), yb, y16.data(), dy16.data(), dx16.data());
    EXPECT_LT(relative_error(to_f32(y16), y), kTol);
    EXPECT_LT(relative_error(to_f32(dx16), dx), kTol);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Bf16Pool,
                         ::testing::Values(DT_POOL_MAX, DT_POOL_AVG_INCLUDE_PADDING));

TEST_F(Bf16, ReluAndAddMatchFloat32)
{
    // Odd length: the vector loops' tails too.
    const int64_t count = 1000 + 7;
    const auto d = dt_tensor_desc_1d(DT_FLOAT32, count), b = with(d, DT_BFLOAT16);
    auto a = rounded(size_t(count), 10), g = rounded(size_t(count), 11);
    a[0] = 0.0f;
    a[1] = -0.0f;
    std::vector<float> y(count), dx(count), sum(count);
    ASSERT_EQ(dt_compute_relu_forward(c, &d, a.data(), y.data()), DT_OK);
    ASSERT_EQ(dt_compute_relu_backward(c, &d, a.data(), g.data(), dx.data()), DT_OK);
    ASSERT_EQ(dt_compute_add(c, &d, a.data(), g.data(), sum.data()), DT_OK);
    const auto a16 = to_bf16(a), g16 = to_bf16(g);
    std::vector<uint16_t> y16(count), dx16(count), sum16(count);
    ASSERT_EQ(dt_compute_relu_forward(c, &b, a16.data(), y16.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_relu_backward(c, &b, a16.data(), g16.data(), dx16.data()), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_add(c, &b, a16.data(), g16.data(), sum16.data()), DT_OK)
        << dt_last_error();
    // ReLU of values that are bfloat16 already is exact; the sum is one rounding off.
    EXPECT_EQ(to_f32(y16), y);
    EXPECT_EQ(to_f32(dx16), dx);
    EXPECT_EQ(to_f32(sum16), to_f32(to_bf16(sum)));
}

} // namespace
} // namespace dt::test

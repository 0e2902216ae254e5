// SPDX-License-Identifier: Apache-2.0
// Batch normalisation on the GPU against the oneDNN plugin on the same inputs: the cuDNN
// plugin's own kernels (DISTTRAIN_CUDNN_BATCHNORM=native) over awkward shapes in both
// layouts, float32 and bfloat16, and cuDNN's (=cudnn) over a few. Each case checks the
// training forward (y, the saved statistics, the running statistics), the backward (dx,
// dscale, dshift) and the inference forward; the own kernels must also give the same bits
// when the forward runs again without running statistics (no atomics). The fused ReLU and
// the fused shortcut add match their unfused sequences bit for bit. bfloat16
// activations are compared with oneDNN's float32 results on the same (bfloat16-exact)
// inputs: the tensors to bfloat16's rounding, the per-channel vectors (float32 sums of
// the same values) as float32 ones. An unknown DISTTRAIN_CUDNN_BATCHNORM is refused.
// Without a GPU every test is skipped.
#include "cudnn_test_fixture.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>

namespace dt::test {
namespace {

// rows: the (n * h * w, c) view of channels-last activations; else (n, c, h, w).
struct Shape {
    const char *name;
    bool rows;
    int64_t n, c, h, w;
    float offset; // x is uniform in [offset - 1, offset + 1]
    size_t count() const { return size_t(n * c * h * w); }
    dt_tensor_desc_t desc(dt_dtype_t t) const
    {
        return rows ? dt_tensor_desc_2d(t, n * h * w, c) : dt_tensor_desc_4d(t, n, c, h, w);
    }
};

const Shape kShapes[] = {
    {"PlanesOdd", false, 2, 3, 9, 9, 0.0f},          // H * W = 81: one element per access
    {"PlanesByFour", false, 4, 20, 8, 8, 0.0f},      // H * W = 64: four per access
    {"OneSample", false, 1, 6, 5, 7, 0.0f},          // one plane per channel
    {"PlanesOfOne", false, 5, 7, 1, 1, 0.0f},        // H * W = 1: a single row per plane
    {"PlanesOffset", false, 3, 5, 14, 14, 10.0f},    // |mean| >> std
    {"PlanesLarge", false, 64, 3, 56, 56, 0.0f},     // 64 * 56 * 56 per channel
    {"RowsByFour", true, 2, 8, 9, 9, 0.0f},          // C = 8
    {"RowsOdd", true, 1000, 13, 1, 1, 0.0f},         // C = 13; 1000 rows, no block's multiple
    {"RowsFew", true, 3, 24, 1, 1, 0.0f},            // fewer rows than a block's threads
    {"RowsSingle", true, 1, 37, 1, 1, 0.0f},         // one row: variance 0
    {"RowsWide", true, 777, 2052, 1, 1, 10.0f},      // many tiles of channels, |mean| >> std
    {"RowsLarge", true, 64, 4, 56, 56, 0.0f},        // 64 * 56 * 56 rows
};

struct Case {
    Shape shape;
    dt_dtype_t dtype;
    const char *kernels; // DISTTRAIN_CUDNN_BATCHNORM
};

// The case's name in gtest's messages, instead of its bytes.
void PrintTo(const Case &c, std::ostream *os)
{
    *os << c.shape.name << (c.dtype == DT_BFLOAT16 ? " bfloat16 " : " float32 ") << c.kernels;
}

std::vector<Case> cases()
{
    std::vector<Case> out;
    for (const Shape &s : kShapes)
        for (const dt_dtype_t t : {DT_FLOAT32, DT_BFLOAT16})
            out.push_back({s, t, "native"});
    // cuDNN forced: its NCHW kernels, its (rows, C) ones, its bfloat16 (or float32 copies).
    for (const char *name : {"PlanesOdd", "PlanesByFour", "RowsByFour"})
        for (const Shape &s : kShapes)
            if (std::string(s.name) == name)
                out.push_back({s, DT_FLOAT32, "cudnn"});
    out.push_back({kShapes[0], DT_BFLOAT16, "cudnn"});
    return out;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info)
{
    return std::string(info.param.shape.name) +
           (info.param.dtype == DT_BFLOAT16 ? "_Bf16_" : "_F32_") + info.param.kernels;
}

class CudnnBatchnorm : public CudnnBf16, public ::testing::WithParamInterface<Case> {
protected:
    CudnnBatchnorm() { batchnorm_ = GetParam().kernels; }

    // Device activations of the case's dtype: v's values (rounded to bfloat16 in v).
    void *activation(std::vector<float> &v) { return bf16_ ? bf16(v) : up(v); }
    void *output(size_t n) { return bf16_ ? zeros16(n) : up(std::vector<float>(n)); }
    std::vector<float> fetch(const void *d, size_t n)
    {
        return bf16_ ? down16(d, n) : down(d, n);
    }
    float *vec(const std::vector<float> &v) { return static_cast<float *>(up(v)); }
    // Per-channel sums of m terms of order 1 (dscale, dshift): their rounding grows with
    // sqrt(m) whatever the sum, so the tolerance is relative to sqrt(m) at least.
    static void expect_sums_close(const std::vector<float> &got, const std::vector<float> &want,
                                  const char *what, double tol, double m)
    {
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i],
                        tol * std::max({1.0, std::sqrt(m), std::fabs(double(want[i]))}))
                << what << i;
    }

    // A case's host inputs, from seeds base + 1 .. base + 6: x around the shape's offset,
    // a second activation (dy, or a residual block's shortcut), per-channel scale and
    // shift, and the starting values of the running statistics.
    struct Inputs {
        std::vector<float> x, other, scale, shift, rm0, rv0;
    };
    Inputs inputs(unsigned base) const
    {
        const Shape &s = GetParam().shape;
        const size_t n = s.count(), c = size_t(s.c);
        return {random_vector(n, base + 1, s.offset - 1.0f, s.offset + 1.0f),
                random_vector(n, base + 2),
                random_vector(c, base + 3, 0.5f, 1.5f),
                random_vector(c, base + 4),
                random_vector(c, base + 5),
                random_vector(c, base + 6, 0.5f, 2.0f)};
    }
    // One forward's per-channel statistics on the device: the saved mean and invstd, and
    // running ones that start at rm0 and rv0.
    struct Stats {
        float *mean, *invstd, *running_mean, *running_var;
    };
    Stats stats(const std::vector<float> &rm0, const std::vector<float> &rv0)
    {
        const std::vector<float> unset(rm0.size());
        return {vec(unset), vec(unset), vec(rm0), vec(rv0)};
    }
    // Two forwards' statistics, bit for bit.
    void expect_same_stats(const Stats &a, const Stats &b, size_t c)
    {
        EXPECT_TRUE(down(a.mean, c) == down(b.mean, c)) << "save_mean";
        EXPECT_TRUE(down(a.invstd, c) == down(b.invstd, c)) << "save_invstd";
        EXPECT_TRUE(down(a.running_mean, c) == down(b.running_mean, c)) << "running_mean";
        EXPECT_TRUE(down(a.running_var, c) == down(b.running_var, c)) << "running_var";
    }

    const bool bf16_ = GetParam().dtype == DT_BFLOAT16;
    const bool native_ = std::string(GetParam().kernels) == "native";
};

TEST_P(CudnnBatchnorm, AgreesWithOnednn)
{
    const Shape &s = GetParam().shape;
    const size_t n = s.count(), c = size_t(s.c);
    const float eps = 1e-5f, momentum = 0.1f;
    auto [x, dy, scale, shift, rm0, rv0] = inputs(60);
    void *gx = activation(x), *gdy = activation(dy); // x, dy: now the values the GPU holds

    // The reference: oneDNN in float32 on the same values.
    const dt_tensor_desc_t fd = s.desc(DT_FLOAT32), gd = s.desc(GetParam().dtype);
    std::vector<float> y(n), mean(c), inv(c), rm = rm0, rv = rv0, dx(n), ds(c), dsh(c), yi(n);
    ASSERT_EQ(dt_compute_batchnorm_forward_training(cpu, &fd, x.data(), scale.data(),
                                                    shift.data(), eps, momentum, y.data(),
                                                    mean.data(), inv.data(), rm.data(),
                                                    rv.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(cpu, &fd, x.data(), dy.data(), scale.data(),
                                            mean.data(), inv.data(), eps, dx.data(), ds.data(),
                                            dsh.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(cpu, &fd, x.data(), scale.data(),
                                                     shift.data(), rm.data(), rv.data(), eps,
                                                     yi.data()), DT_OK) << dt_last_error();

    float *gs = vec(scale), *gsh = vec(shift), *grm = vec(rm0), *grv = vec(rv0);
    float *gm = vec(std::vector<float>(c)), *gi = vec(std::vector<float>(c));
    float *gm2 = vec(std::vector<float>(c)), *gi2 = vec(std::vector<float>(c));
    float *gds = vec(std::vector<float>(c)), *gdsh = vec(std::vector<float>(c));
    void *gy = output(n), *gy2 = output(n), *gdx = output(n), *gyi = output(n);
    ASSERT_EQ(dt_compute_batchnorm_forward_training(gpu, &gd, gx, gs, gsh, eps, momentum, gy,
                                                    gm, gi, grm, grv), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_training(gpu, &gd, gx, gs, gsh, eps, momentum, gy2,
                                                    gm2, gi2, nullptr, nullptr), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(gpu, &gd, gx, gdy, gs, gm, gi, eps, gdx, gds, gdsh),
              DT_OK) << dt_last_error();
    // Inference from the reference's running statistics, so that it checks inference alone.
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(gpu, &gd, gx, gs, gsh, vec(rm), vec(rv),
                                                     eps, gyi), DT_OK) << dt_last_error();

    // Tensors: float32's accumulated rounding, or one bfloat16 rounding (2^-9) of the
    // result; per-channel vectors are float32 sums of the same values either way. cuDNN's
    // own arithmetic gets the tolerance the older tests gave it.
    const double tensors = bf16_ ? 1e-2 : native_ ? 1e-4 : 1e-3, vectors = native_ ? 1e-4 : 1e-3;
    expect_close(fetch(gy, n), y, "y ", tensors);
    expect_close(down(gm, c), mean, "save_mean ", vectors);
    expect_close(down(gi, c), inv, "save_invstd ", vectors);
    expect_close(down(grm, c), rm, "running_mean ", vectors);
    expect_close(down(grv, c), rv, "running_var ", vectors);
    expect_close(fetch(gdx, n), dx, "dx ", tensors);
    const double per_channel = double(n / c);
    expect_sums_close(down(gds, c), ds, "dscale ", vectors, per_channel);
    expect_sums_close(down(gdsh, c), dsh, "dshift ", vectors, per_channel);
    expect_close(fetch(gyi, n), yi, "inference y ", tensors);
    if (native_) { // deterministic: the same sums in the same order
        EXPECT_TRUE(fetch(gy2, n) == fetch(gy, n)) << "y without running statistics";
        EXPECT_TRUE(down(gm2, c) == down(gm, c)) << "save_mean without running statistics";
        EXPECT_TRUE(down(gi2, c) == down(gi, c)) << "save_invstd without running statistics";
    }
}

// Batch norm fused with ReLU on the GPU against the unfused sequence on the GPU (batch
// norm then ReLU; ReLU's backward then the batch-norm backward): the own kernels fuse,
// the cuDNN path composes; either way the same values (the same sums in the same order,
// the same ReLU of the same value).
TEST_P(CudnnBatchnorm, FusedReluMatchesTheUnfusedSequence)
{
    const Shape &s = GetParam().shape;
    const size_t n = s.count(), c = size_t(s.c);
    const float eps = 1e-5f, momentum = 0.1f;
    auto [x, dy, scale, shift, rm0, rv0] = inputs(70);
    void *gx = activation(x), *gdy = activation(dy);
    const dt_tensor_desc_t gd = s.desc(GetParam().dtype);
    float *gs = vec(scale), *gsh = vec(shift);
    const Stats f = stats(rm0, rv0), u = stats(rm0, rv0);
    float *ds_f = vec(std::vector<float>(c)), *db_f = vec(std::vector<float>(c));
    float *ds_u = vec(std::vector<float>(c)), *db_u = vec(std::vector<float>(c));
    void *y_f = output(n), *y_u = output(n), *dx_f = output(n), *dx_u = output(n);
    void *masked = output(n), *yi_f = output(n), *yi_u = output(n);

    ASSERT_EQ(dt_compute_batchnorm_relu_forward_training(gpu, &gd, gx, gs, gsh, eps, momentum,
                                                         y_f, f.mean, f.invstd, f.running_mean,
                                                         f.running_var),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_training(gpu, &gd, gx, gs, gsh, eps, momentum, y_u,
                                                    u.mean, u.invstd, u.running_mean,
                                                    u.running_var), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(gpu, &gd, y_u, y_u), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_relu_backward(gpu, &gd, gx, y_f, gdy, gs, f.mean, f.invstd,
                                                 eps, dx_f, ds_f, db_f), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_backward(gpu, &gd, y_u, gdy, masked), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(gpu, &gd, gx, masked, gs, u.mean, u.invstd, eps,
                                            dx_u, ds_u, db_u), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_relu_forward_inference(gpu, &gd, gx, gs, gsh, f.running_mean,
                                                          f.running_var, eps, yi_f), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(gpu, &gd, gx, gs, gsh, u.running_mean,
                                                     u.running_var, eps, yi_u), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(gpu, &gd, yi_u, yi_u), DT_OK) << dt_last_error();

    const auto y = fetch(y_f, n);
    EXPECT_TRUE(y == fetch(y_u, n)) << "y";
    expect_same_stats(f, u, c);
    EXPECT_TRUE(fetch(dx_f, n) == fetch(dx_u, n)) << "dx";
    EXPECT_TRUE(down(ds_f, c) == down(ds_u, c)) << "dscale";
    EXPECT_TRUE(down(db_f, c) == down(db_u, c)) << "dshift";
    EXPECT_TRUE(fetch(yi_f, n) == fetch(yi_u, n)) << "inference y";
    // ReLU had work to do: about half the outputs are 0.
    const auto zeros = size_t(std::count(y.begin(), y.end(), 0.0f));
    EXPECT_GT(zeros, 0u);
    EXPECT_LT(zeros, n);
}

// The end of a residual block: the batch norm with the shortcut z added before the ReLU
// (training, then inference with the updated running statistics) against the batch norm,
// then add_relu on the same GPU, bit for bit.
TEST_P(CudnnBatchnorm, ShortcutAddMatchesTheUnfusedSequence)
{
    const Shape &s = GetParam().shape;
    const size_t n = s.count(), c = size_t(s.c);
    const float eps = 1e-5f, momentum = 0.1f;
    auto [x, z, scale, shift, rm0, rv0] = inputs(80);
    void *gx = activation(x), *gz = activation(z);
    const dt_tensor_desc_t gd = s.desc(GetParam().dtype);
    float *gs = vec(scale), *gsh = vec(shift);
    const Stats f = stats(rm0, rv0), u = stats(rm0, rv0);
    void *y_f = output(n), *y_u = output(n), *yi_f = output(n), *yi_u = output(n);

    ASSERT_EQ(dt_compute_batchnorm_add_relu_forward_training(gpu, &gd, gx, gz, gs, gsh, eps,
                                                             momentum, y_f, f.mean, f.invstd,
                                                             f.running_mean, f.running_var),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_training(gpu, &gd, gx, gs, gsh, eps, momentum, y_u,
                                                    u.mean, u.invstd, u.running_mean,
                                                    u.running_var), DT_OK)
        << dt_last_error();
    const auto bn = fetch(y_u, n);
    ASSERT_EQ(dt_compute_add_relu(gpu, &gd, y_u, gz, y_u), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_add_relu_forward_inference(gpu, &gd, gx, gz, gs, gsh,
                                                              f.running_mean, f.running_var,
                                                              eps, yi_f),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(gpu, &gd, gx, gs, gsh, u.running_mean,
                                                     u.running_var, eps, yi_u), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_add_relu(gpu, &gd, yi_u, gz, yi_u), DT_OK) << dt_last_error();

    const auto y = fetch(y_f, n);
    EXPECT_TRUE(y == fetch(y_u, n)) << "y";
    expect_same_stats(f, u, c);
    EXPECT_TRUE(fetch(yi_f, n) == fetch(yi_u, n)) << "inference y";
    // The shortcut and the ReLU both had work to do.
    EXPECT_FALSE(y == bn);
    const auto zeros = size_t(std::count(y.begin(), y.end(), 0.0f));
    EXPECT_GT(zeros, 0u);
    EXPECT_LT(zeros, n);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudnnBatchnorm, ::testing::ValuesIn(cases()), case_name);

TEST(CudnnBatchnormSetting, UnknownValueIsRefused)
{
    setenv("DISTTRAIN_CUDNN_BATCHNORM", "fastest", 1);
    dt_compute_params_t p{};
    p.field_mask = DT_COMPUTE_PARAM_FIELD_PLUGIN;
    p.plugin = "cudnn";
    dt_compute_h h = nullptr;
    const dt_status_t s = dt_compute_create(&p, &h);
    const std::string why = dt_last_error();
    unsetenv("DISTTRAIN_CUDNN_BATCHNORM");
    if (s != DT_OK && why.find("no GPU") != std::string::npos)
        GTEST_SKIP() << "no GPU: " << why;
    if (s == DT_OK)
        dt_compute_destroy(h);
    EXPECT_EQ(s, DT_ERR_INVALID_CONFIG) << why;
    EXPECT_NE(why.find("DISTTRAIN_CUDNN_BATCHNORM='fastest'"), std::string::npos) << why;
    EXPECT_NE(why.find("native"), std::string::npos) << why;
}

} // namespace
} // namespace dt::test

// SPDX-License-Identifier: Apache-2.0
// Batch normalisation fused with ReLU and addition fused with ReLU on the oneDNN plugin:
// bit for bit what the unfused sequence gives (the batch-norm or add call, then ReLU;
// ReLU's backward, then the batch-norm backward; the batch norm, then the add of a
// shortcut with ReLU), float32 and bfloat16, on channels-last activations seen as (rows,
// C) (the row loops), NCHW (the plane loops) and narrow (rows, C) tensors; and the
// arguments the fused calls refuse.
#include "compute_test_util.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>

namespace dt::test {
namespace {

struct Case {
    const char *name;
    dt_dtype_t dtype;
    int ndims;
    int64_t dims[4];
};

std::string case_name(const ::testing::TestParamInfo<Case> &info) { return info.param.name; }
// The case's name in gtest's messages, instead of its bytes.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

const Case kCases[] = {
    {"channels_last_f32", DT_FLOAT32, 2, {120, 32, 0, 0}},
    {"channels_last_bf16", DT_BFLOAT16, 2, {120, 32, 0, 0}},
    {"nchw_f32", DT_FLOAT32, 4, {3, 6, 5, 7}},
    {"nchw_bf16", DT_BFLOAT16, 4, {3, 6, 5, 7}},
    {"narrow_rows_f32", DT_FLOAT32, 2, {50, 5, 0, 0}},
};

class FusedRelu : public ComputeFixture, public ::testing::WithParamInterface<Case> {
protected:
    dt_tensor_desc_t desc() const
    {
        const Case &k = GetParam();
        dt_tensor_desc_t d{};
        d.dtype = k.dtype;
        d.ndims = k.ndims;
        for (int i = 0; i < k.ndims; ++i)
            d.dims[i] = k.dims[i];
        return d;
    }
    size_t count() const
    {
        size_t n = 1;
        for (int i = 0; i < GetParam().ndims; ++i)
            n *= size_t(GetParam().dims[i]);
        return n;
    }
    int64_t channels() const { return GetParam().dims[1]; }
    size_t bytes() const { return count() * (GetParam().dtype == DT_FLOAT32 ? 4 : 2); }

    // Random activations in the case's dtype (raw bytes), shifted so the batch norm's
    // output has both signs and some exact zeros are possible.
    std::vector<uint8_t> activations(unsigned seed, float lo = -2.0f, float hi = 3.0f)
    {
        const auto v = random_vector(count(), seed, lo, hi);
        std::vector<uint8_t> out(bytes());
        if (GetParam().dtype == DT_FLOAT32) {
            std::memcpy(out.data(), v.data(), out.size());
        } else {
            const auto d = dt_tensor_desc_1d(DT_FLOAT32, int64_t(v.size()));
            EXPECT_EQ(dt_compute_cast(c, &d, v.data(), GetParam().dtype, out.data()), DT_OK)
                << dt_last_error();
        }
        return out;
    }
    std::vector<uint8_t> buffer() const { return std::vector<uint8_t>(bytes(), 0xcd); }
};

std::vector<float> per_channel(int64_t c, unsigned seed, float lo, float hi)
{
    return random_vector(size_t(c), seed, lo, hi);
}

// Compares bit patterns: the fused ops promise the unfused bits, not nearby values.
template <typename T>
void expect_same_bits(const std::vector<T> &fused, const std::vector<T> &unfused,
                      const char *what)
{
    ASSERT_EQ(fused.size(), unfused.size()) << what;
    size_t differ = 0, first = fused.size() * sizeof(T);
    const size_t n = fused.size() * sizeof(T);
    const auto *a = reinterpret_cast<const uint8_t *>(fused.data());
    const auto *b = reinterpret_cast<const uint8_t *>(unfused.data());
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) {
            ++differ;
            first = std::min(first, i);
        }
    EXPECT_EQ(differ, 0u) << what << ": " << differ << " bytes differ, first at byte " << first;
}

// One training forward's per-channel statistics: saved mean and invstd, and running
// ones that start at 0.1 and 0.9.
struct Stats {
    std::vector<float> mean, invstd, running_mean, running_var;
    explicit Stats(size_t channels)
        : mean(channels), invstd(channels), running_mean(channels, 0.1f),
          running_var(channels, 0.9f)
    {
    }
};

void expect_same_stats(const Stats &a, const Stats &b)
{
    expect_same_bits(a.mean, b.mean, "save_mean");
    expect_same_bits(a.invstd, b.invstd, "save_invstd");
    expect_same_bits(a.running_mean, b.running_mean, "running_mean");
    expect_same_bits(a.running_var, b.running_var, "running_var");
}

TEST_P(FusedRelu, TrainingForwardMatchesBatchNormThenRelu)
{
    const auto d = desc();
    const int64_t ch = channels();
    const size_t nch = size_t(ch);
    const auto x = activations(1);
    const auto scale = per_channel(ch, 2, 0.5f, 1.5f), shift = per_channel(ch, 3, -0.5f, 0.5f);
    Stats f(nch), u(nch);
    auto y_f = buffer(), y_u = buffer();

    ASSERT_EQ(dt_compute_batchnorm_relu_forward_training(
                  c, &d, x.data(), scale.data(), shift.data(), 1e-5f, 0.1f, y_f.data(),
                  f.mean.data(), f.invstd.data(), f.running_mean.data(), f.running_var.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_training(
                  c, &d, x.data(), scale.data(), shift.data(), 1e-5f, 0.1f, y_u.data(),
                  u.mean.data(), u.invstd.data(), u.running_mean.data(), u.running_var.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(c, &d, y_u.data(), y_u.data()), DT_OK) << dt_last_error();

    expect_same_bits(y_f, y_u, "y");
    expect_same_stats(f, u);
    // Not a vacuous comparison: ReLU zeroed some outputs and kept others.
    const auto y_raw = y_f;
    size_t zeros = 0;
    const size_t elem = bytes() / count();
    for (size_t i = 0; i < count(); ++i) {
        bool zero = true;
        for (size_t b = 0; b < elem; ++b)
            zero = zero && y_raw[i * elem + b] == 0;
        zeros += zero;
    }
    EXPECT_GT(zeros, count() / 5);
    EXPECT_LT(zeros, count() * 4 / 5);
}

TEST_P(FusedRelu, InferenceForwardMatchesBatchNormThenRelu)
{
    const auto d = desc();
    const int64_t ch = channels();
    const auto x = activations(4);
    const auto scale = per_channel(ch, 5, 0.5f, 1.5f), shift = per_channel(ch, 6, -0.5f, 0.5f);
    const auto rm = per_channel(ch, 7, 0.0f, 1.0f), rv = per_channel(ch, 8, 0.5f, 2.0f);
    auto y_f = buffer(), y_u = buffer();
    ASSERT_EQ(dt_compute_batchnorm_relu_forward_inference(c, &d, x.data(), scale.data(),
                                                          shift.data(), rm.data(), rv.data(),
                                                          1e-5f, y_f.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(c, &d, x.data(), scale.data(),
                                                     shift.data(), rm.data(), rv.data(), 1e-5f,
                                                     y_u.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(c, &d, y_u.data(), y_u.data()), DT_OK) << dt_last_error();
    expect_same_bits(y_f, y_u, "y");
}

TEST_P(FusedRelu, BackwardMatchesReluBackwardThenBatchNormBackward)
{
    const auto d = desc();
    const int64_t ch = channels();
    const size_t nch = size_t(ch);
    const auto x = activations(9);
    const auto dy = activations(10, -1.0f, 1.0f);
    const auto scale = per_channel(ch, 11, 0.5f, 1.5f), shift = per_channel(ch, 12, -0.5f, 0.5f);
    std::vector<float> mean(nch), inv(nch);
    auto y = buffer();
    ASSERT_EQ(dt_compute_batchnorm_relu_forward_training(c, &d, x.data(), scale.data(),
                                                         shift.data(), 1e-5f, 0.1f, y.data(),
                                                         mean.data(), inv.data(), nullptr,
                                                         nullptr),
              DT_OK)
        << dt_last_error();

    auto dx_f = buffer(), dx_u = buffer(), masked = buffer();
    std::vector<float> ds_f(nch), db_f(nch), ds_u(nch), db_u(nch);
    ASSERT_EQ(dt_compute_batchnorm_relu_backward(c, &d, x.data(), y.data(), dy.data(),
                                                 scale.data(), mean.data(), inv.data(), 1e-5f,
                                                 dx_f.data(), ds_f.data(), db_f.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_relu_backward(c, &d, y.data(), dy.data(), masked.data()), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_backward(c, &d, x.data(), masked.data(), scale.data(),
                                            mean.data(), inv.data(), 1e-5f, dx_u.data(),
                                            ds_u.data(), db_u.data()),
              DT_OK)
        << dt_last_error();
    expect_same_bits(dx_f, dx_u, "dx");
    expect_same_bits(ds_f, ds_u, "dscale");
    expect_same_bits(db_f, db_u, "dshift");

    // The mask mattered: without it the gradients differ.
    std::vector<float> ds_plain(nch), db_plain(nch);
    auto dx_plain = buffer();
    ASSERT_EQ(dt_compute_batchnorm_backward(c, &d, x.data(), dy.data(), scale.data(),
                                            mean.data(), inv.data(), 1e-5f, dx_plain.data(),
                                            ds_plain.data(), db_plain.data()),
              DT_OK)
        << dt_last_error();
    EXPECT_NE(db_plain, db_f);
}

TEST_P(FusedRelu, AddMatchesAddThenRelu)
{
    const auto d = desc();
    auto a = activations(13, -1.0f, 1.0f);
    const auto b = activations(14, -1.0f, 1.0f);
    // The edges of ReLU: zeros of both signs, infinities, NaN, a denormal.
    if (GetParam().dtype == DT_FLOAT32) {
        const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f};
        std::memcpy(a.data(), special, sizeof(special));
    } else {
        const uint16_t special[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8001};
        std::memcpy(a.data(), special, sizeof(special));
    }
    auto out_f = buffer(), out_u = buffer();
    ASSERT_EQ(dt_compute_add_relu(c, &d, a.data(), b.data(), out_f.data()), DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_add(c, &d, a.data(), b.data(), out_u.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_relu_forward(c, &d, out_u.data(), out_u.data()), DT_OK)
        << dt_last_error();
    expect_same_bits(out_f, out_u, "c");
    // In place, as the API allows (c may be a).
    ASSERT_EQ(dt_compute_add_relu(c, &d, a.data(), b.data(), a.data()), DT_OK)
        << dt_last_error();
    expect_same_bits(a, out_u, "c in place");
}

TEST_P(FusedRelu, ReluBackwardOfASumMatchesAddThenReluBackward)
{
    const auto d = desc();
    auto y = activations(15, -1.0f, 1.0f);
    auto a = activations(16, -1.0f, 1.0f);
    const auto b = activations(17, -1.0f, 1.0f);
    auto dx_f = buffer(), dx_u = buffer();
    ASSERT_EQ(dt_compute_relu_backward_sum(c, &d, y.data(), a.data(), b.data(), dx_f.data()),
              DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_add(c, &d, a.data(), b.data(), dx_u.data()), DT_OK) << dt_last_error();
    ASSERT_EQ(dt_compute_relu_backward(c, &d, y.data(), dx_u.data(), dx_u.data()), DT_OK)
        << dt_last_error();
    expect_same_bits(dx_f, dx_u, "dx");
    // The mask mattered: some of the gradient was stopped, some passed.
    auto sum = buffer();
    ASSERT_EQ(dt_compute_add(c, &d, a.data(), b.data(), sum.data()), DT_OK) << dt_last_error();
    EXPECT_NE(dx_f, sum);
    EXPECT_NE(dx_f, buffer());
    // In place, as the API allows (dx may be dy_a).
    ASSERT_EQ(dt_compute_relu_backward_sum(c, &d, y.data(), a.data(), b.data(), a.data()),
              DT_OK) << dt_last_error();
    expect_same_bits(a, dx_u, "dx in place");
}

INSTANTIATE_TEST_SUITE_P(Compute, FusedRelu, ::testing::ValuesIn(kCases), case_name);

// The end of a residual block: the batch norm, then add_relu with the shortcut z. Also
// on float16, whose plane loops are the generic ones.
class FusedAddRelu : public FusedRelu {};

TEST_P(FusedAddRelu, TrainingForwardMatchesBatchNormThenAddRelu)
{
    const auto d = desc();
    const int64_t ch = channels();
    const size_t nch = size_t(ch);
    const auto x = activations(18);
    const auto z = activations(19, -1.5f, 1.0f);
    const auto scale = per_channel(ch, 20, 0.5f, 1.5f), shift = per_channel(ch, 21, -0.5f, 0.5f);
    Stats f(nch), u(nch);
    auto y_f = buffer(), y_u = buffer();
    ASSERT_EQ(dt_compute_batchnorm_add_relu_forward_training(
                  c, &d, x.data(), z.data(), scale.data(), shift.data(), 1e-5f, 0.1f,
                  y_f.data(), f.mean.data(), f.invstd.data(), f.running_mean.data(),
                  f.running_var.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_training(
                  c, &d, x.data(), scale.data(), shift.data(), 1e-5f, 0.1f, y_u.data(),
                  u.mean.data(), u.invstd.data(), u.running_mean.data(), u.running_var.data()),
              DT_OK)
        << dt_last_error();
    auto bn = y_u;
    ASSERT_EQ(dt_compute_add_relu(c, &d, y_u.data(), z.data(), y_u.data()), DT_OK)
        << dt_last_error();
    expect_same_bits(y_f, y_u, "y");
    expect_same_stats(f, u);
    // The shortcut mattered: the batch norm's ReLU alone gives other bits.
    ASSERT_EQ(dt_compute_relu_forward(c, &d, bn.data(), bn.data()), DT_OK) << dt_last_error();
    EXPECT_NE(y_f, bn);
}

TEST_P(FusedAddRelu, InferenceForwardMatchesBatchNormThenAddRelu)
{
    const auto d = desc();
    const int64_t ch = channels();
    const auto x = activations(22);
    const auto z = activations(23, -1.5f, 1.0f);
    const auto scale = per_channel(ch, 24, 0.5f, 1.5f), shift = per_channel(ch, 25, -0.5f, 0.5f);
    const auto rm = per_channel(ch, 26, 0.0f, 1.0f), rv = per_channel(ch, 27, 0.5f, 2.0f);
    auto y_f = buffer(), y_u = buffer();
    ASSERT_EQ(dt_compute_batchnorm_add_relu_forward_inference(c, &d, x.data(), z.data(),
                                                              scale.data(), shift.data(),
                                                              rm.data(), rv.data(), 1e-5f,
                                                              y_f.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_batchnorm_forward_inference(c, &d, x.data(), scale.data(),
                                                     shift.data(), rm.data(), rv.data(), 1e-5f,
                                                     y_u.data()),
              DT_OK)
        << dt_last_error();
    ASSERT_EQ(dt_compute_add_relu(c, &d, y_u.data(), z.data(), y_u.data()), DT_OK)
        << dt_last_error();
    expect_same_bits(y_f, y_u, "y");
}

const Case kAddCases[] = {
    kCases[0], kCases[1], kCases[2], kCases[3], kCases[4],
    {"nchw_f16", DT_FLOAT16, 4, {3, 6, 5, 7}},
};

INSTANTIATE_TEST_SUITE_P(Compute, FusedAddRelu, ::testing::ValuesIn(kAddCases), case_name);

class FusedReluErrors : public ComputeFixture {};

TEST_F(FusedReluErrors, RefusesBadArgumentsNamingThem)
{
    const auto d = dt_tensor_desc_2d(DT_FLOAT32, 8, 4);
    std::vector<float> x(32, 1.0f), y(32), dy(32), dx(32), v(4, 1.0f), m(4), s(4);
    auto expect_refused = [](dt_status_t rc, const std::string &words) {
        EXPECT_EQ(rc, DT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(dt_last_error()).find(words), std::string::npos)
            << dt_last_error() << " (expected it to mention: " << words << ")";
    };
    expect_refused(dt_compute_batchnorm_relu_backward(c, &d, x.data(), nullptr, dy.data(),
                                                      v.data(), m.data(), s.data(), 1e-5f,
                                                      dx.data(), m.data(), s.data()),
                   "y");
    expect_refused(dt_compute_batchnorm_relu_backward(c, &d, x.data(), y.data(), dy.data(),
                                                      v.data(), m.data(), s.data(), 1e-5f,
                                                      dy.data(), m.data(), s.data()),
                   "dx is the same memory as dy");
    expect_refused(dt_compute_batchnorm_relu_forward_training(
                       c, &d, x.data(), v.data(), v.data(), 0.0f, 0.1f, y.data(), m.data(),
                       s.data(), nullptr, nullptr),
                   "epsilon");
    expect_refused(dt_compute_batchnorm_relu_forward_training(
                       c, &d, x.data(), v.data(), v.data(), 1e-5f, 0.1f, y.data(), m.data(),
                       s.data(), m.data(), nullptr),
                   "running_var");
    expect_refused(dt_compute_batchnorm_relu_forward_inference(c, &d, x.data(), v.data(),
                                                               v.data(), nullptr, v.data(),
                                                               1e-5f, y.data()),
                   "running_mean");
    dt_tensor_desc_t three = dt_tensor_desc_2d(DT_FLOAT32, 2, 4);
    three.ndims = 3;
    three.dims[2] = 4;
    expect_refused(dt_compute_batchnorm_relu_forward_inference(c, &three, x.data(), v.data(),
                                                               v.data(), v.data(), v.data(),
                                                               1e-5f, y.data()),
                   "x_desc");
    expect_refused(dt_compute_add_relu(c, &d, x.data(), nullptr, y.data()), "b");
    expect_refused(dt_compute_add_relu(nullptr, &d, x.data(), x.data(), y.data()), "compute");
    expect_refused(dt_compute_relu_backward_sum(c, &d, y.data(), nullptr, dy.data(),
                                                dx.data()),
                   "dy_a");
    expect_refused(dt_compute_relu_backward_sum(c, &d, y.data(), dy.data(), dy.data(),
                                                y.data()),
                   "dx is the same memory as y");
    expect_refused(dt_compute_batchnorm_add_relu_forward_training(
                       c, &d, x.data(), nullptr, v.data(), v.data(), 1e-5f, 0.1f, y.data(),
                       m.data(), s.data(), nullptr, nullptr),
                   "z");
    expect_refused(dt_compute_batchnorm_add_relu_forward_training(
                       c, &d, x.data(), y.data(), v.data(), v.data(), 1e-5f, 0.1f, y.data(),
                       m.data(), s.data(), nullptr, nullptr),
                   "y is the same memory as z");
    expect_refused(dt_compute_batchnorm_add_relu_forward_training(
                       c, &d, x.data(), dy.data(), v.data(), v.data(), 1e-5f, 2.0f, y.data(),
                       m.data(), s.data(), nullptr, nullptr),
                   "momentum");
    expect_refused(dt_compute_batchnorm_add_relu_forward_inference(
                       c, &d, x.data(), dy.data(), v.data(), v.data(), v.data(), nullptr, 1e-5f,
                       y.data()),
                   "running_var");
    expect_refused(dt_compute_batchnorm_add_relu_forward_inference(
                       c, &d, x.data(), y.data(), v.data(), v.data(), v.data(), v.data(), 1e-5f,
                       y.data()),
                   "y is the same memory as z");
}

} // namespace
} // namespace dt::test

// SPDX-License-Identifier: Apache-2.0
// The cuDNN plugin's own batch-norm kernels (cudnn_bn_kernels.cu) run on the CPU by
// cuda_emu, against a double-precision reference written here: the training forward (y,
// saved and running statistics), the backward (dx, dscale, dshift, with and without the
// fused ReLU's mask) and the inference forward, with and without ReLU, and both forwards
// with a shortcut added before the ReLU (bit for bit the plain forward, then the add_relu
// kernel's arithmetic), over the shapes
// that take each path of the kernels (planes and rows, four elements per access or one,
// a part or many, a single row), in float32, float16 and bfloat16. Each case runs in the
// three orders of cuda_emu (blocks and threads forward, reversed, shuffled) and must give
// the same bits in each: the kernels promise determinism, and a race would show there.
// Tensors and scratch are emu_check::DeviceBytes (guard bytes, then a guard page: a write
// outside shows, a read past the end faults), outputs and scratch start as NaN (an
// element never written shows).
#include "cuda_emu_check.h"

#include "cudnn_bn_kernels.h"
#include "cudnn_elem.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using dtp::cudnn::BnLaunch;
using dtp::cudnn::BnShape;
using emu_check::DeviceBytes;

struct Shape {
    const char *name;
    int64_t n, c, spatial; // spatial 1: (rows, C)
    float offset;          // x is uniform in [offset - 1, offset + 1]
    int sms;               // the GPU's multiprocessors, which size the grids
    bool misaligned;
};

const Shape kShapes[] = {
    {"PlanesOdd", 2, 3, 81, 0.0f, 4, false},          // one element per access
    {"PlanesByFour", 4, 20, 64, 0.0f, 4, false},      // four per access
    {"PlanesByFourMisaligned", 4, 20, 64, 0.0f, 4, true},
    {"OneSample", 1, 6, 35, 0.0f, 132, false},        // one plane per channel
    {"PlanesOffset", 3, 5, 196, 10.0f, 4, false},     // |mean| >> std
    {"PlanesManyParts", 64, 3, 3136, 0.0f, 132, false}, // 64 parts, more than a finish row
    {"RowsByFour", 162, 8, 1, 0.0f, 4, false},
    {"RowsByFourMisaligned", 162, 8, 1, 0.0f, 4, true},
    {"RowsOdd", 1000, 13, 1, 0.0f, 132, false},       // no block's multiple
    {"RowsFew", 3, 24, 1, 0.0f, 132, false},          // fewer rows than a block's threads
    {"RowsSingle", 1, 37, 1, 0.0f, 4, false},         // one row: variance 0
    {"RowsWide", 301, 516, 1, 10.0f, 4, false},       // tiles of channels, |mean| >> std
    {"RowsManyParts", 12544, 4, 1, 0.0f, 132, false}, // hundreds of parts
};

struct Case {
    Shape shape;
    int dtype;
};

const char *dtype_name(int dtype)
{
    return dtype == dtp::cudnn::kDtypeF32 ? "F32" : dtype == dtp::cudnn::kDtypeF16 ? "F16" : "Bf16";
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.shape.name << " " << dtype_name(c.dtype); }

// Conversions between float and the case's element type, on the host.
float to_float(int dtype, const void *p, size_t i)
{
    if (dtype == dtp::cudnn::kDtypeF32)
        return static_cast<const float *>(p)[i];
    if (dtype == dtp::cudnn::kDtypeF16)
        return __half2float(static_cast<const __half *>(p)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
}

void store(int dtype, void *p, size_t i, float v)
{
    if (dtype == dtp::cudnn::kDtypeF32)
        static_cast<float *>(p)[i] = v;
    else if (dtype == dtp::cudnn::kDtypeF16)
        static_cast<__half *>(p)[i] = __float2half_rn(v);
    else
        static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
}

size_t elem_bytes(int dtype) { return dtype == dtp::cudnn::kDtypeF32 ? 4 : 2; }

// The relative precision of an element of dtype: rounding a float result to it.
double precision(int dtype)
{
    return dtype == dtp::cudnn::kDtypeF32 ? 2e-5 : dtype == dtp::cudnn::kDtypeF16 ? 2e-3 : 1e-2;
}

constexpr float kEpsilon = 1e-5f, kMomentum = 0.1f;

// Everything one run of the kernels reads and writes.
struct BnRun {
    Case cs;
    size_t count, channels;
    DeviceBytes x, dy, y, y_relu, dx, y_inference, scratch;
    // dy is also the shortcut of the forwards with the add fused.
    DeviceBytes y_add, y_inference_plain, y_inference_add;
    std::vector<float> scale, shift, mean, invstd, running_mean, running_var, dscale, dshift,
        mean2, invstd2, dscale_relu, dshift_relu, mean3, invstd3;
    DeviceBytes dx_relu;

    explicit BnRun(const Case &c)
        : cs(c), count(size_t(c.shape.n * c.shape.c * c.shape.spatial)),
          channels(size_t(c.shape.c)), x(bytes(), misalign()), dy(bytes(), misalign()),
          y(bytes(), misalign()), y_relu(bytes(), misalign()), dx(bytes(), misalign()),
          y_inference(bytes(), misalign()),
          scratch(dtp::cudnn::bn_scratch_bytes(shape(), c.shape.sms), 0),
          y_add(bytes(), misalign()), y_inference_plain(bytes(), misalign()),
          y_inference_add(bytes(), misalign()), dx_relu(bytes(), misalign())
    {
    }
    size_t elem() const { return elem_bytes(cs.dtype); }
    // Tensors one element off the 16-byte alignment where the shape asks.
    size_t misalign() const { return cs.shape.misaligned ? elem() : 0; }
    size_t bytes() const { return count * elem(); }
    BnShape shape() const { return BnShape{cs.dtype, cs.shape.n, cs.shape.c, cs.shape.spatial}; }
    BnLaunch launch() const { return BnLaunch{nullptr, cs.shape.sms, scratch.data()}; }

    // Inputs (the same for every run of a case), NaN in every output and in the scratch.
    void prepare()
    {
        std::mt19937 rng(1234);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (size_t i = 0; i < count; ++i) {
            store(cs.dtype, x.data(), i, cs.shape.offset + u(rng));
            store(cs.dtype, dy.data(), i, u(rng));
        }
        const float nan = std::nanf("");
        for (DeviceBytes *b : {&y, &y_relu, &dx, &dx_relu, &y_inference, &y_add,
                               &y_inference_plain, &y_inference_add})
            for (size_t i = 0; i < count; ++i)
                store(cs.dtype, b->data(), i, nan);
        std::memset(scratch.data(), 0xff,
                    dtp::cudnn::bn_scratch_bytes(shape(), cs.shape.sms));
        scale.resize(channels);
        shift.resize(channels);
        running_mean.resize(channels);
        running_var.resize(channels);
        for (size_t c = 0; c < channels; ++c) {
            scale[c] = 0.5f + 0.1f * float(c % 7);
            shift[c] = 0.2f - 0.05f * float(c % 5);
            running_mean[c] = 0.1f * float(c % 3);
            running_var[c] = 1.0f + 0.05f * float(c % 4);
        }
        for (std::vector<float> *v : {&mean, &invstd, &dscale, &dshift, &mean2, &invstd2,
                                      &dscale_relu, &dshift_relu, &mean3, &invstd3})
            v->assign(channels, nan);
    }

    // The forward with and without ReLU and with the shortcut added (the last two without
    // running statistics), both backwards, then the inference forwards with the updated
    // running statistics.
    void launch_all()
    {
        const BnShape g = shape();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_training(
                      launch(), g, x.data(), nullptr, scale.data(), shift.data(), kEpsilon,
                      kMomentum, y.data(), mean.data(), invstd.data(), running_mean.data(),
                      running_var.data(), false),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_training(
                      launch(), g, x.data(), nullptr, scale.data(), shift.data(), kEpsilon,
                      kMomentum, y_relu.data(), mean2.data(), invstd2.data(), nullptr, nullptr,
                      true),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_training(
                      launch(), g, x.data(), dy.data(), scale.data(), shift.data(), kEpsilon,
                      kMomentum, y_add.data(), mean3.data(), invstd3.data(), nullptr, nullptr,
                      true),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_backward(launch(), g, x.data(), dy.data(), nullptr,
                                                 scale.data(), mean.data(), invstd.data(),
                                                 dx.data(), dscale.data(), dshift.data()),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_backward(launch(), g, x.data(), dy.data(), y_relu.data(),
                                                 scale.data(), mean2.data(), invstd2.data(),
                                                 dx_relu.data(), dscale_relu.data(),
                                                 dshift_relu.data()),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_inference(
                      launch(), g, x.data(), nullptr, scale.data(), shift.data(),
                      running_mean.data(), running_var.data(), kEpsilon, y_inference.data(),
                      true),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_inference(
                      launch(), g, x.data(), nullptr, scale.data(), shift.data(),
                      running_mean.data(), running_var.data(), kEpsilon,
                      y_inference_plain.data(), false),
                  0)
            << cuda_emu::last_message();
        ASSERT_EQ(dtp::cudnn::launch_bn_forward_inference(
                      launch(), g, x.data(), dy.data(), scale.data(), shift.data(),
                      running_mean.data(), running_var.data(), kEpsilon, y_inference_add.data(),
                      true),
                  0)
            << cuda_emu::last_message();
    }

    // No kernel wrote outside a tensor or the scratch.
    bool guards_intact() const
    {
        for (const DeviceBytes *b : {&x, &dy, &y, &y_relu, &dx, &dx_relu, &y_inference, &scratch,
                                     &y_add, &y_inference_plain, &y_inference_add})
            if (!b->guards_intact())
                return false;
        return true;
    }

    // Every output's bytes, to compare runs in other orders.
    std::vector<char> outputs() const
    {
        std::vector<char> out;
        for (const DeviceBytes *b : {&y, &y_relu, &dx, &dx_relu, &y_inference, &y_add,
                                     &y_inference_plain, &y_inference_add}) {
            const char *p = reinterpret_cast<const char *>(b->data());
            out.insert(out.end(), p, p + bytes());
        }
        for (const std::vector<float> *v : {&mean, &invstd, &running_mean, &running_var,
                                            &dscale, &dshift, &mean2, &invstd2, &dscale_relu,
                                            &dshift_relu, &mean3, &invstd3}) {
            const char *p = reinterpret_cast<const char *>(v->data());
            out.insert(out.end(), p, p + v->size() * sizeof(float));
        }
        return out;
    }
};

// The statistics of channel c from the inputs as the kernels read them.
struct ChannelReference {
    double mean, var, invstd;
};

class BnKernelsOnCpu : public ::testing::TestWithParam<Case> {
  protected:
    void TearDown() override { cuda_emu::set_order(cuda_emu::Order::forward); }

    // Element (n, c, s) of a (N, C, S) tensor; S = 1 is (rows, C).
    static size_t at(const Shape &s, int64_t n, int64_t c, int64_t i)
    {
        return size_t((n * s.c + c) * s.spatial + i);
    }

    template <typename F>
    static void for_channel(const Shape &s, int64_t c, F &&f)
    {
        for (int64_t n = 0; n < s.n; ++n)
            for (int64_t i = 0; i < s.spatial; ++i)
                f(at(s, n, c, i));
    }

    static ChannelReference statistics(const BnRun &r, int64_t c)
    {
        double sum = 0, sq = 0, m = double(r.cs.shape.n * r.cs.shape.spatial);
        for_channel(r.cs.shape, c, [&](size_t i) { sum += to_float(r.cs.dtype, r.x.data(), i); });
        const double mean = sum / m;
        for_channel(r.cs.shape, c, [&](size_t i) {
            const double d = to_float(r.cs.dtype, r.x.data(), i) - mean;
            sq += d * d;
        });
        const double var = sq / m;
        return {mean, var, 1.0 / std::sqrt(var + double(kEpsilon))};
    }

    // got against want: |got - want| <= tol * (scale + |want|), scale the tensor's typical
    // magnitude, so that a value near zero is held to the tensor's precision.
    static void expect_near(const char *what, int64_t c, size_t i, double got, double want,
                            double tol, double scale)
    {
        EXPECT_LE(std::abs(got - want), tol * (scale + std::abs(want)))
            << what << ", channel " << c << ", element " << i << ": got " << got << ", want "
            << want;
    }

    // The forward with ReLU or not, the statistics, the running statistics.
    static void check_forward(const BnRun &r, const std::vector<ChannelReference> &ref,
                              const std::vector<float> &rm0, const std::vector<float> &rv0)
    {
        const Shape &s = r.cs.shape;
        const double m = double(s.n * s.spatial), tol = precision(r.cs.dtype);
        for (int64_t c = 0; c < s.c; ++c) {
            const ChannelReference &st = ref[size_t(c)];
            const double spread = std::sqrt(st.var) + 1e-3;
            expect_near("save_mean", c, 0, r.mean[c], st.mean, 2e-5, spread);
            expect_near("save_mean (relu)", c, 0, r.mean2[c], st.mean, 2e-5, spread);
            expect_near("save_invstd", c, 0, r.invstd[c], st.invstd, 2e-5, 0);
            expect_near("save_invstd (relu)", c, 0, r.invstd2[c], st.invstd, 2e-5, 0);
            const double unbias = m > 1 ? m / (m - 1) : 1.0;
            expect_near("running_mean", c, 0, r.running_mean[c],
                        (1 - kMomentum) * rm0[c] + kMomentum * st.mean, 2e-5, 1);
            expect_near("running_var", c, 0, r.running_var[c],
                        (1 - kMomentum) * rv0[c] + kMomentum * st.var * unbias, 2e-5, 1);
            const double a = double(r.scale[c]) * st.invstd;
            for_channel(s, c, [&](size_t i) {
                const double want =
                    a * (to_float(r.cs.dtype, r.x.data(), i) - st.mean) + r.shift[c];
                expect_near("y", c, i, to_float(r.cs.dtype, r.y.data(), i), want, tol, 1);
                expect_near("y (relu)", c, i, to_float(r.cs.dtype, r.y_relu.data(), i),
                            std::max(want, 0.0), tol, 1);
            });
        }
    }

    // The backward of y (mask null) or of y_relu (dy where the fused forward's output is
    // positive): dshift = sum dy, dscale = sum dy xhat, dx = a (dy - dshift / M - xhat
    // dscale / M).
    static void check_backward(const BnRun &r, const std::vector<ChannelReference> &ref,
                               const DeviceBytes *mask, const DeviceBytes &dx,
                               const std::vector<float> &dscale, const std::vector<float> &dshift)
    {
        const Shape &s = r.cs.shape;
        const int t = r.cs.dtype;
        const double m = double(s.n * s.spatial), tol = precision(t);
        const char *tag = mask != nullptr ? " (relu)" : "";
        for (int64_t c = 0; c < s.c; ++c) {
            const ChannelReference &st = ref[size_t(c)];
            auto grad = [&](size_t i) {
                const double g = to_float(t, r.dy.data(), i);
                return mask == nullptr || to_float(t, mask->data(), i) > 0.0f ? g : 0.0;
            };
            double sum_dy = 0, sum_dy_xhat = 0, magnitude = 0;
            for_channel(s, c, [&](size_t i) {
                const double xhat = (to_float(t, r.x.data(), i) - st.mean) * st.invstd;
                sum_dy += grad(i);
                sum_dy_xhat += grad(i) * xhat;
                magnitude += std::abs(grad(i)) * (1 + std::abs(xhat));
            });
            // Sums of float terms: held to float's precision of the terms' magnitude.
            expect_near((std::string("dshift") + tag).c_str(), c, 0, dshift[c], sum_dy, 2e-6,
                        magnitude);
            expect_near((std::string("dscale") + tag).c_str(), c, 0, dscale[c], sum_dy_xhat,
                        2e-6, magnitude);
            // dx is a difference of terms of size a |dy|, which float rounds to its
            // precision of those terms: a channel of one row has dx = 0 exactly, the
            // kernel's a dy - a dy in float.
            const double a = double(r.scale[c]) * st.invstd;
            double largest = 0;
            for_channel(s, c, [&](size_t i) {
                const double xhat = (to_float(t, r.x.data(), i) - st.mean) * st.invstd;
                largest = std::max(largest, a * (std::abs(grad(i)) + std::abs(sum_dy / m) +
                                                 std::abs(xhat * sum_dy_xhat / m)));
            });
            for_channel(s, c, [&](size_t i) {
                const double xhat = (to_float(t, r.x.data(), i) - st.mean) * st.invstd;
                const double want = a * (grad(i) - sum_dy / m - xhat * sum_dy_xhat / m);
                expect_near((std::string("dx") + tag).c_str(), c, i, to_float(t, dx.data(), i),
                            want, tol, largest + 1e-3);
            });
        }
    }

    // A forward with the shortcut added: bit for bit the plain forward's output, then
    // the add_relu kernel's max(round(y + z), 0), and the plain forward's statistics.
    static void check_add(const BnRun &r, const DeviceBytes &plain, const DeviceBytes &fused,
                          const char *what)
    {
        const int t = r.cs.dtype;
        std::vector<char> rounded(r.elem());
        for (size_t i = 0; i < r.count; ++i) {
            store(t, rounded.data(), 0,
                  to_float(t, plain.data(), i) + to_float(t, r.dy.data(), i));
            const float want = std::max(to_float(t, rounded.data(), 0), 0.0f);
            const float got = to_float(t, fused.data(), i);
            ASSERT_EQ(got, want) << what << ", element " << i;
        }
    }

    static void check_inference(const BnRun &r)
    {
        const Shape &s = r.cs.shape;
        for (int64_t c = 0; c < s.c; ++c) {
            const double a = double(r.scale[c]) / std::sqrt(double(r.running_var[c]) + kEpsilon);
            for_channel(s, c, [&](size_t i) {
                const double x = to_float(r.cs.dtype, r.x.data(), i);
                const double want = std::max(a * (x - r.running_mean[c]) + r.shift[c], 0.0);
                expect_near("inference y (relu)", c, i,
                            to_float(r.cs.dtype, r.y_inference.data(), i), want,
                            precision(r.cs.dtype), 1);
            });
        }
    }
};

TEST_P(BnKernelsOnCpu, MatchesTheReferenceInEveryOrder)
{
    BnRun run(GetParam());
    run.prepare();
    const std::vector<float> rm0 = run.running_mean, rv0 = run.running_var;
    cuda_emu::set_order(cuda_emu::Order::forward);
    run.launch_all();
    if (HasFatalFailure())
        return;
    EXPECT_TRUE(run.guards_intact()) << "a kernel wrote outside its tensors";
    std::vector<ChannelReference> ref;
    for (int64_t c = 0; c < run.cs.shape.c; ++c)
        ref.push_back(statistics(run, c));
    check_forward(run, ref, rm0, rv0);
    check_backward(run, ref, nullptr, run.dx, run.dscale, run.dshift);
    check_backward(run, ref, &run.y_relu, run.dx_relu, run.dscale_relu, run.dshift_relu);
    check_inference(run);
    check_add(run, run.y, run.y_add, "training forward with the shortcut");
    check_add(run, run.y_inference_plain, run.y_inference_add,
              "inference forward with the shortcut");
    EXPECT_EQ(run.mean3, run.mean);
    EXPECT_EQ(run.invstd3, run.invstd);
    if (HasFailure())
        return;
    const std::vector<char> first = run.outputs();
    for (const auto order : {cuda_emu::Order::reverse, cuda_emu::Order::shuffle}) {
        cuda_emu::set_order(order);
        run.prepare();
        run.launch_all();
        EXPECT_TRUE(run.outputs() == first)
            << "the bits differ when blocks and threads run "
            << (order == cuda_emu::Order::reverse ? "in reverse" : "shuffled");
    }
}

std::vector<Case> cases()
{
    std::vector<Case> out;
    for (const Shape &s : kShapes)
        for (int t : {dtp::cudnn::kDtypeF32, dtp::cudnn::kDtypeF16, dtp::cudnn::kDtypeBF16})
            out.push_back({s, t});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BnKernelsOnCpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                             return std::string(info.param.shape.name) + "_" +
                                    dtype_name(info.param.dtype);
                         });

TEST(BnKernelsOnCpuErrors, UnknownDtypeIsRefusedBeforeAnyLaunch)
{
    std::vector<float> v(64, 1.0f), stats(4, 0.0f), scratch(4096);
    const BnShape g{99, 4, 4, 4};
    const BnLaunch l{nullptr, 4, scratch.data()};
    EXPECT_EQ(dtp::cudnn::launch_bn_forward_training(l, g, v.data(), nullptr, stats.data(),
                                                     stats.data(), kEpsilon, kMomentum, v.data(),
                                                     stats.data(), stats.data(), nullptr, nullptr,
                                                     false),
              int(cudaErrorInvalidValue));
    EXPECT_EQ(dtp::cudnn::launch_bn_backward(l, g, v.data(), v.data(), nullptr, stats.data(),
                                             stats.data(), stats.data(), v.data(), stats.data(),
                                             stats.data()),
              int(cudaErrorInvalidValue));
}

} // namespace

// SPDX-License-Identifier: Apache-2.0
// The layers' forward/backward wiring on the oneDNN plugin: finite-difference checks of
// whole small networks (convolution, batch norm, residual block, pooling, flatten,
// linear, loss), and that backward reports every gradient exactly once. The operations
// themselves are checked against PyTorch in tests/compute.
#include "common/error.h"
#include "common/random.h"
#include "nn/batchnorm.h"
#include "nn/cast.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "nn/sequential.h"
#include "nn/simple_layers.h"
#include "zoo/zoo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace dt::models {
namespace {

struct Fixture {
    Compute c{ComputeOptions{1, false, ""}};
    Random rng{3};
    Tensor x, y;
    SoftmaxCrossEntropy loss{c};

    void make_batch(int64_t n, int64_t ch, int64_t hw, int classes)
    {
        x = Tensor(c, desc_f32({n, ch, hw, hw}));
        init_normal(c, x, 1.0, rng);
        y = Tensor(c, dt_tensor_desc_1d(DT_INT32, n));
        std::vector<int32_t> labels(static_cast<size_t>(n));
        for (auto &l : labels)
            l = int32_t(rng.below(uint64_t(classes)));
        y.copy_from_host(c, labels.data());
    }
    double loss_of(Layer &net) { return loss.forward(net.forward(x, true), y).loss; }

    // The batch's images in channels-last order (the same values), as load_input makes
    // them for a channels-last model.
    void to_channels_last()
    {
        const int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
        const std::vector<float> nchw = x.to_vector(c);
        Model shape_only{"", InputShape{int(ch), int(h), int(w), 1}, nullptr, DT_LAYOUT_NHWC};
        Tensor out;
        load_input(c, shape_only, out, nchw.data(), n);
        x = out;
    }
};

// Compares backward's gradients with central differences on a few entries of each
// parameter; returns how many parameters reported ready.
void check_gradients(Fixture &f, Layer &net)
{
    std::vector<Parameter *> params;
    net.parameters(params);
    std::map<std::string, int> ready;
    f.loss_of(net);
    net.backward(f.loss.backward(), [&](Parameter &p) { ++ready[p.name]; });
    ASSERT_EQ(ready.size(), params.size());
    for (Parameter *p : params) {
        EXPECT_EQ(ready[p->name], 1) << p->name;
        std::vector<float> w = p->value.to_vector(f.c), g = p->grad.to_vector(f.c);
        for (int k = 0; k < 4; ++k) {
            const size_t i = size_t(f.rng.below(w.size()));
            const float eps = 1e-3f, saved = w[i];
            w[i] = saved + eps;
            p->value.copy_from_host(f.c, w.data());
            const double up = f.loss_of(net);
            w[i] = saved - eps;
            p->value.copy_from_host(f.c, w.data());
            const double down = f.loss_of(net);
            w[i] = saved;
            p->value.copy_from_host(f.c, w.data());
            const double numeric = (up - down) / (2.0 * eps);
            EXPECT_NEAR(g[i], numeric, 3e-3 + 0.05 * std::abs(numeric))
                << p->name << "[" << i << "]";
        }
    }
}

TEST(Layers, ConvBatchNormResidualPoolLinear)
{
    Fixture f;
    f.make_batch(4, 2, 6, 5);
    Sequential net(f.c, "net");
    net.add<Conv2d>("conv", ConvSpec{2, 3, 3, 1, 1, true}, f.rng);
    net.add<BatchNorm>("bn", 3);
    net.add<Relu>("relu");
    auto &block = net.add<Residual>("block");
    block.body().add<Conv2d>("block.conv", ConvSpec{3, 4, 3, 2, 1, false}, f.rng);
    block.body().add<BatchNorm>("block.bn", 4);
    block.shortcut().add<Conv2d>("block.proj", ConvSpec{3, 4, 1, 2, 0, false}, f.rng);
    net.add<Pool>("pool", PoolSpec{DT_POOL_AVG_INCLUDE_PADDING, 0, 0, 0, true});
    net.add<Flatten>("flatten");
    net.add<Linear>("fc", 4, 5, f.rng);
    net.set_input_grad(false);
    check_gradients(f, net);
}

// The same network on channels-last activations: convolutions and pooling on NHWC, batch
// norm on the (N * H * W, C) view, flatten after global pooling.
TEST(Layers, ChannelsLastGradients)
{
    Fixture f;
    f.make_batch(4, 2, 6, 5);
    f.to_channels_last();
    ASSERT_TRUE(f.x.channels_last());
    ASSERT_EQ(f.x.dim(3), 2);
    Sequential net(f.c, "net");
    net.add<Conv2d>("conv", ConvSpec{2, 16, 3, 1, 1, true}, f.rng);
    net.add<BatchNorm>("bn", 16);
    net.add<Relu>("relu");
    net.add<Conv2d>("pointwise", ConvSpec{16, 16, 1, 1, 0, true}, f.rng); // one sgemm
    auto &block = net.add<Residual>("block");
    block.body().add<Conv2d>("block.conv", ConvSpec{16, 20, 3, 2, 1, false}, f.rng);
    block.body().add<BatchNorm>("block.bn", 20);
    block.shortcut().add<Conv2d>("block.proj", ConvSpec{16, 20, 1, 2, 0, false}, f.rng);
    net.add<Pool>("maxpool", PoolSpec{DT_POOL_MAX, 2, 1, 0, false});
    net.add<Pool>("pool", PoolSpec{DT_POOL_AVG_INCLUDE_PADDING, 0, 0, 0, true});
    net.add<Flatten>("flatten");
    net.add<Linear>("fc", 20, 5, f.rng);
    net.set_input_grad(false);
    check_gradients(f, net);
}

// BatchNorm with relu (one fused pass) against BatchNorm then a Relu layer, both from one
// seed on the same images: the same bits in the loss, every gradient and the running
// statistics, in NCHW and channels-last, float32 and with bfloat16 activations.
void expect_fused_bn_relu_is_bn_then_relu(bool channels_last, dt_dtype_t act)
{
    struct Run {
        double loss;
        std::vector<std::vector<float>> grads, buffers;
    };
    auto run = [&](bool fused) {
        Fixture f;
        f.make_batch(4, 3, 6, 5);
        if (channels_last)
            f.to_channels_last();
        Sequential net(f.c, "net");
        if (act != DT_FLOAT32)
            net.add<Cast>("input.cast", act);
        net.add<Conv2d>("conv", ConvSpec{3, 16, 3, 1, 1, false}, f.rng);
        net.add<BatchNorm>("bn", 16, 1.0f, fused);
        if (!fused)
            net.add<Relu>("relu");
        auto &block = net.add<Residual>("block");
        block.body().add<Conv2d>("block.conv", ConvSpec{16, 16, 3, 1, 1, false}, f.rng);
        block.body().add<BatchNorm>("block.bn", 16, 1.0f, fused);
        if (!fused)
            block.body().add<Relu>("block.relu");
        net.add<Pool>("pool", PoolSpec{DT_POOL_AVG_INCLUDE_PADDING, 0, 0, 0, true});
        if (act != DT_FLOAT32)
            net.add<Cast>("features.cast", DT_FLOAT32);
        net.add<Flatten>("flatten");
        net.add<Linear>("fc", 16, 5, f.rng);
        net.set_input_grad(false);
        Run r;
        r.loss = f.loss_of(net);
        net.backward(f.loss.backward(), [](Parameter &) {});
        std::vector<Parameter *> params;
        net.parameters(params);
        for (Parameter *p : params)
            r.grads.push_back(p->grad.to_vector(f.c));
        std::vector<Buffer *> buffers;
        net.buffers(buffers);
        for (Buffer *b : buffers)
            r.buffers.push_back(b->value.to_vector(f.c));
        return r;
    };
    const Run fused = run(true), unfused = run(false);
    EXPECT_EQ(std::memcmp(&fused.loss, &unfused.loss, sizeof(double)), 0)
        << fused.loss << " vs " << unfused.loss;
    ASSERT_EQ(fused.grads.size(), unfused.grads.size());
    for (size_t i = 0; i < fused.grads.size(); ++i)
        EXPECT_TRUE(fused.grads[i] == unfused.grads[i] &&
                    std::memcmp(fused.grads[i].data(), unfused.grads[i].data(),
                                fused.grads[i].size() * sizeof(float)) == 0)
            << "gradient " << i;
    ASSERT_EQ(fused.buffers.size(), unfused.buffers.size());
    for (size_t i = 0; i < fused.buffers.size(); ++i)
        EXPECT_EQ(std::memcmp(fused.buffers[i].data(), unfused.buffers[i].data(),
                              fused.buffers[i].size() * sizeof(float)),
                  0)
            << "buffer " << i;
}

TEST(Layers, FusedBatchNormReluIsBatchNormThenRelu)
{
    expect_fused_bn_relu_is_bn_then_relu(false, DT_FLOAT32);
    expect_fused_bn_relu_is_bn_then_relu(true, DT_FLOAT32);
    expect_fused_bn_relu_is_bn_then_relu(false, DT_BFLOAT16);
    expect_fused_bn_relu_is_bn_then_relu(true, DT_BFLOAT16);
}

// A model built twice from one seed, fed the same images in NCHW and in NHWC: the
// logits, the loss, every parameter gradient and the batch-norm running statistics
// agree to float32 rounding (the two layouts sum in different orders). resnet20 has 3x3
// and strided 1x1 convolutions (oneDNN's nhwc kernels), resnet50 also 1x1 stride-1 ones
// (one sgemm over the batch) and max pooling.
void expect_layouts_agree(const char *name, const InputShape &in, int64_t batch)
{
    SCOPED_TRACE(name);
    Fixture f;
    f.make_batch(batch, in.channels, in.height, in.classes);
    const std::vector<float> images = f.x.to_vector(f.c);
    struct Run {
        std::vector<float> logits;
        double loss = 0;
        std::map<std::string, std::vector<float>> grads, buffers;
    };
    auto run = [&](dt_tensor_layout_t layout) {
        Model m = build_model(f.c, name, in, 7, layout);
        Tensor x;
        load_input(f.c, m, x, images.data(), batch);
        EXPECT_EQ(x.layout(), layout);
        Run r;
        const Tensor logits = m.net->forward(x, true);
        r.logits = logits.to_vector(f.c);
        r.loss = f.loss.forward(logits, f.y).loss;
        m.net->backward(f.loss.backward(), [](Parameter &) {});
        for (Parameter *p : m.parameters())
            r.grads[p->name] = p->grad.to_vector(f.c);
        for (Buffer *b : m.buffers())
            r.buffers[b->name] = b->value.to_vector(f.c);
        return r;
    };
    const Run a = run(DT_LAYOUT_NCHW), b = run(DT_LAYOUT_NHWC);
    EXPECT_NEAR(a.loss, b.loss, 1e-4 * std::abs(a.loss));
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t i = 0; i < a.logits.size(); ++i)
        EXPECT_NEAR(a.logits[i], b.logits[i], 1e-4 + 1e-3 * std::abs(a.logits[i])) << i;
    auto compare = [](const std::map<std::string, std::vector<float>> &x,
                      const std::map<std::string, std::vector<float>> &y) {
        ASSERT_EQ(x.size(), y.size());
        for (const auto &[name, v] : x) {
            const std::vector<float> &w = y.at(name);
            ASSERT_EQ(v.size(), w.size()) << name;
            float scale = 0;
            for (float e : v)
                scale = std::max(scale, std::abs(e));
            for (size_t i = 0; i < v.size(); ++i)
                ASSERT_NEAR(v[i], w[i], 1e-6 + 2e-3 * scale) << name << "[" << i << "]";
        }
    };
    compare(a.grads, b.grads);
    compare(a.buffers, b.buffers);
}

TEST(Layers, ChannelsLastMatchesNchw)
{
    expect_layouts_agree("resnet20", InputShape{3, 12, 12, 10}, 2);
    // 64x64 leaves layer4 2x2 maps: with 4 images its batch norms see 16 values a
    // channel (on 1x1 maps of 2 images the statistics amplify rounding too much to compare).
    expect_layouts_agree("resnet50", InputShape{3, 64, 64, 10}, 4);
}

// Channels-last features of more than 1x1 cannot be flattened into what a Linear trained
// on NCHW expects; Flatten says so instead of permuting silently.
TEST(Layers, ChannelsLastFlattenOfPlanesIsRefused)
{
    Fixture f;
    f.make_batch(2, 3, 4, 3);
    f.to_channels_last();
    Flatten flatten(f.c, "flatten");
    EXPECT_THROW(flatten.forward(f.x, true), std::invalid_argument);
}

// A residual block whose body ends with a batch norm adds the shortcut and takes the ReLU
// in that batch norm's pass (dt_compute_batchnorm_add_relu_*): the same bits as the block
// whose body ends with a layer that does nothing (a float32-to-float32 Cast), which adds
// and takes the ReLU in a pass of its own. Forward in training and in evaluation, loss,
// every gradient and the running statistics, in both layouts.
void expect_fused_block_is_unfused(bool channels_last)
{
    SCOPED_TRACE(channels_last ? "NHWC" : "NCHW");
    Fixture f;
    f.make_batch(4, 8, 6, 5);
    if (channels_last)
        f.to_channels_last();
    struct Run {
        std::vector<float> logits, eval;
        double loss = 0;
        std::map<std::string, std::vector<float>> grads, buffers;
    };
    auto run = [&](bool fused) {
        Random rng{11};
        Sequential net(f.c, "net");
        auto &block = net.add<Residual>("block");
        block.body().add<Conv2d>("block.conv", ConvSpec{8, 8, 3, 1, 1, false}, rng);
        block.body().add<BatchNorm>("block.bn", 8);
        if (!fused)
            block.body().add<Cast>("block.same", DT_FLOAT32);
        auto &second = net.add<Residual>("second"); // an identity shortcut
        second.body().add<Conv2d>("second.conv", ConvSpec{8, 8, 1, 1, 0, false}, rng);
        second.body().add<BatchNorm>("second.bn", 8);
        if (!fused)
            second.body().add<Cast>("second.same", DT_FLOAT32);
        net.add<Pool>("pool", PoolSpec{DT_POOL_AVG_INCLUDE_PADDING, 0, 0, 0, true});
        net.add<Flatten>("flatten");
        net.add<Linear>("fc", 8, 5, rng);
        EXPECT_EQ(block.body().fuses_add_relu(), fused);
        Run r;
        const Tensor logits = net.forward(f.x, true);
        r.logits = logits.to_vector(f.c);
        r.loss = f.loss.forward(logits, f.y).loss;
        net.backward(f.loss.backward(), [](Parameter &) {});
        std::vector<Parameter *> params;
        net.parameters(params);
        for (Parameter *p : params)
            r.grads[p->name] = p->grad.to_vector(f.c);
        std::vector<Buffer *> buffers;
        net.buffers(buffers);
        for (Buffer *b : buffers)
            r.buffers[b->name] = b->value.to_vector(f.c);
        r.eval = net.forward(f.x, false).to_vector(f.c);
        return r;
    };
    const Run a = run(true), b = run(false);
    EXPECT_EQ(a.logits, b.logits);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.grads, b.grads);
    EXPECT_EQ(a.buffers, b.buffers);
    EXPECT_EQ(a.eval, b.eval);
    EXPECT_EQ(a.grads.size(), 8u);
}

TEST(Layers, ResidualBlockEndingInBatchNormFusesItsAddBitForBit)
{
    expect_fused_block_is_unfused(false);
    expect_fused_block_is_unfused(true);
}

TEST(Layers, IdentityResidualAndMaxPool)
{
    Fixture f;
    f.make_batch(3, 3, 4, 3);
    Sequential net(f.c, "net");
    auto &block = net.add<Residual>("block");
    block.body().add<Conv2d>("block.conv", ConvSpec{3, 3, 3, 1, 1, true}, f.rng);
    net.add<Pool>("pool", PoolSpec{DT_POOL_MAX, 2, 2, 0, false});
    net.add<Flatten>("flatten");
    net.add<Linear>("fc", 12, 3, f.rng);
    net.set_input_grad(false);
    check_gradients(f, net);
}

TEST(Layers, ZooModelsRunAndLearnOneBatch)
{
    for (const char *name : {"mlp", "convnet", "resnet20"}) {
        Fixture f;
        f.make_batch(8, 1, 28, 10);
        Model m = build_model(f.c, name, InputShape{}, 1);
        Optimizer opt(f.c, OptimizerConfig{}, m.parameters());
        const double first = f.loss_of(*m.net);
        for (int i = 0; i < 5; ++i) {
            f.loss_of(*m.net);
            m.net->backward(f.loss.backward(), [](Parameter &) {});
            opt.step(0.05);
        }
        EXPECT_LT(f.loss_of(*m.net), first) << name;
    }
}

// Each model trains on images of its smallest_image_side, which check_model_input lets
// through, and refuses one pixel less before any layer meets them.
TEST(Layers, ZooModelsTakeTheirSmallestImages)
{
    for (const char *name : {"mlp", "convnet", "resnet20"}) {
        const int side = smallest_image_side(name);
        Fixture f;
        f.make_batch(4, 1, side, 10);
        const InputShape in{1, side, side, 10};
        EXPECT_NO_THROW(check_model_input(name, in, "data")) << name;
        Model m = build_model(f.c, name, in, 1);
        f.loss_of(*m.net);
        m.net->backward(f.loss.backward(), [](Parameter &) {});
        if (side > 1) {
            EXPECT_THROW(check_model_input(name, InputShape{1, side, side - 1, 10}, "data"),
                         InputError) << name;
        }
    }
}

// Linear's bfloat16 path (its own bf16 copies of x, W and dy, reused across forward and
// backward) against float32: the output, input gradient and parameter gradients agree to
// bfloat16's precision.
TEST(Layers, LinearInBf16MatchesFloat32)
{
    Compute c32{ComputeOptions{1, false, ""}};
    Compute c16{ComputeOptions{1, true, ""}};
    if (!c16.bf16_active())
        GTEST_SKIP() << "this CPU does not compute bfloat16 natively";
    Random r32{5}, r16{5}, data{9};
    Linear a(c32, "l", 37, 19, r32), b(c16, "l", 37, 19, r16);
    std::vector<float> x(8 * 37), dy(8 * 19);
    for (float &v : x)
        v = float(data.normal());
    for (float &v : dy)
        v = float(data.normal());
    auto tensor = [](const Compute &c, const std::vector<float> &v, int64_t rows,
                     int64_t cols) {
        Tensor t(c, desc_f32({rows, cols}));
        t.copy_from_host(c, v.data());
        return t;
    };
    auto close = [](const std::vector<float> &got, const std::vector<float> &want,
                    const char *what) {
        float scale = 0;
        for (float w : want)
            scale = std::max(scale, std::fabs(w));
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 0.02f * scale) << what << "[" << i << "]";
    };
    const Tensor x32 = tensor(c32, x, 8, 37), x16 = tensor(c16, x, 8, 37);
    close(b.forward(x16, true).to_vector(c16), a.forward(x32, true).to_vector(c32), "y");
    const Tensor dy32 = tensor(c32, dy, 8, 19), dy16 = tensor(c16, dy, 8, 19);
    close(b.backward(dy16, [](Parameter &) {}).to_vector(c16),
          a.backward(dy32, [](Parameter &) {}).to_vector(c32), "dx");
    std::vector<Parameter *> pa, pb;
    a.parameters(pa);
    b.parameters(pb);
    for (size_t i = 0; i < pa.size(); ++i)
        close(pb[i]->grad.to_vector(c16), pa[i]->grad.to_vector(c32), pa[i]->name.c_str());
}

// ||got - want|| / ||want||.
double relative_error(const std::vector<float> &got, const std::vector<float> &want)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        den += double(want[i]) * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

// Under bfloat16 compute on a CPU the convolutional layers keep bfloat16 activations
// between them (and their gradients), with float32 parameters and gradients.
TEST(Layers, ConvolutionalLayersKeepBf16Activations)
{
    Compute c{ComputeOptions{1, true, ""}};
    if (!c.bf16_active())
        GTEST_SKIP() << "this CPU does not compute bfloat16 natively";
    ASSERT_EQ(c.activation_dtype(), DT_BFLOAT16);
    Random rng{4};
    Sequential net(c, "net");
    net.add<Cast>("input.cast", DT_BFLOAT16);
    net.add<Conv2d>("conv", ConvSpec{3, 16, 3, 1, 1, false}, rng);
    net.add<BatchNorm>("bn", 16);
    net.add<Relu>("relu");
    net.add<Pool>("pool", PoolSpec{DT_POOL_MAX, 2, 2, 0, false});
    Tensor x(c, desc_f32({2, 3, 8, 8}));
    init_normal(c, x, 1.0, rng);
    const Tensor y = net.forward(x, true);
    EXPECT_EQ(y.desc().dtype, DT_BFLOAT16);
    EXPECT_EQ(y.dim(1), 16);
    Tensor dy(c, y.desc());
    dy.fill(c, 1.0f);
    net.set_input_grad(true);
    const Tensor dx = net.backward(dy, [](Parameter &) {});
    EXPECT_EQ(dx.desc().dtype, DT_FLOAT32); // the cast's backward: the input's dtype
    // The classifier takes float32 features only, and says so.
    Linear fc(c, "fc", 16 * 4 * 4, 3, rng);
    Flatten flatten(c, "flatten");
    try {
        fc.forward(flatten.forward(net.forward(x, false), false), false);
        ADD_FAILURE() << "Linear accepted bfloat16 features";
    } catch (const std::invalid_argument &e) {
        EXPECT_NE(std::string(e.what()).find("expected a float32 input, got bfloat16"),
                  std::string::npos) << e.what();
    }
    std::vector<Parameter *> params;
    net.parameters(params);
    for (Parameter *p : params) {
        EXPECT_EQ(p->value.desc().dtype, DT_FLOAT32) << p->name;
        EXPECT_EQ(p->grad.desc().dtype, DT_FLOAT32) << p->name;
    }
}

// resnet20 with bfloat16 activations against float32 from the same weights and images:
// logits, loss, every gradient and the running statistics agree to bfloat16's precision
// (in both layouts: channels-last is the CPU default, NCHW what DISTTRAIN_LAYOUT picks).
TEST(Layers, Resnet20InBf16MatchesFloat32)
{
    Compute c32{ComputeOptions{1, false, ""}};
    Compute c16{ComputeOptions{1, true, ""}};
    if (!c16.bf16_active())
        GTEST_SKIP() << "this CPU does not compute bfloat16 natively";
    const InputShape in{1, 16, 16, 10};
    const int64_t batch = 8;
    Random data{11};
    std::vector<float> images(size_t(batch) * 16 * 16);
    for (float &v : images)
        v = float(data.normal());
    std::vector<int32_t> labels(static_cast<size_t>(batch));
    for (auto &l : labels)
        l = int32_t(data.below(10));
    struct Run {
        std::vector<float> logits;
        double loss = 0;
        std::map<std::string, std::vector<float>> grads, buffers;
    };
    auto run = [&](const Compute &c, dt_tensor_layout_t layout) {
        Model m = build_model(c, "resnet20", in, 7, layout);
        Tensor x, y(c, dt_tensor_desc_1d(DT_INT32, batch));
        y.copy_from_host(c, labels.data());
        load_input(c, m, x, images.data(), batch);
        SoftmaxCrossEntropy loss(c);
        Run r;
        const Tensor logits = m.net->forward(x, true);
        EXPECT_EQ(logits.desc().dtype, DT_FLOAT32);
        r.logits = logits.to_vector(c);
        r.loss = loss.forward(logits, y).loss;
        m.net->backward(loss.backward(), [](Parameter &) {});
        for (Parameter *p : m.parameters())
            r.grads[p->name] = p->grad.to_vector(c);
        for (Buffer *b : m.buffers())
            r.buffers[b->name] = b->value.to_vector(c);
        return r;
    };
    for (const auto layout : {DT_LAYOUT_NHWC, DT_LAYOUT_NCHW}) {
        const Run a = run(c32, layout), b = run(c16, layout);
        EXPECT_NEAR(b.loss, a.loss, 0.02 * std::abs(a.loss)) << layout;
        EXPECT_LT(relative_error(b.logits, a.logits), 0.05) << layout;
        ASSERT_EQ(a.grads.size(), b.grads.size());
        // One batch of 8 near chance: some per-parameter gradients are small sums that
        // cancel (up to ~15% off in bfloat16), most agree to a few percent, and those
        // behind a zero-scale batch norm are zero in both.
        double worst = 0, total = 0;
        for (const auto &[name, g] : a.grads) {
            const double e = relative_error(b.grads.at(name), g);
            EXPECT_LT(e, 0.25) << name << " (layout " << layout << ")";
            worst = std::max(worst, e);
            total += e;
        }
        EXPECT_LT(total / double(a.grads.size()), 0.05) << "layout " << layout;
        for (const auto &[name, v] : a.buffers)
            EXPECT_LT(relative_error(b.buffers.at(name), v), 0.02) << name;
        std::printf("layout %d: loss %.5f / %.5f, worst gradient relative error %.4f\n",
                    int(layout), b.loss, a.loss, worst);
    }
}

TEST(Layers, Resnet50HasItsParameterCount)
{
    Compute c{ComputeOptions{1, false, ""}};
    // torchvision's resnet50: 25,557,032 parameters.
    EXPECT_EQ(build_model(c, "resnet50", default_input("resnet50"), 1).parameter_count(),
              25557032u);
}

} // namespace
} // namespace dt::models

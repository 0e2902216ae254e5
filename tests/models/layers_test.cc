// SPDX-License-Identifier: Apache-2.0
// The layers' forward/backward wiring on the oneDNN plugin: finite-difference checks of
// whole small networks (convolution, batch norm, residual block, pooling, flatten,
// linear, loss), and that backward reports every gradient exactly once. The operations
// themselves are checked against PyTorch in tests/compute.
#include "common/random.h"
#include "nn/batchnorm.h"
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

TEST(Layers, Resnet50HasItsParameterCount)
{
    Compute c{ComputeOptions{1, false, ""}};
    // torchvision's resnet50: 25,557,032 parameters.
    EXPECT_EQ(build_model(c, "resnet50", default_input("resnet50"), 1).parameter_count(),
              25557032u);
}

} // namespace
} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
// ResNets (He et al. 2016): resnet20, the CIFAR-style network of three stages of three
// basic blocks (16, 32, 64 channels), and resnet50, the ImageNet network of bottleneck
// blocks [3, 4, 6, 3]. Projection shortcuts (1x1 convolution + batch norm) where the
// shape changes; the last batch norm of each block starts at zero scale (Goyal et al.),
// which keeps large-batch training stable. With bfloat16 compute on a CPU the activations
// are bfloat16 from the first convolution to the pooled features (Compute::
// activation_dtype): half the memory traffic, and oneDNN's bfloat16 kernels take them
// without a conversion per call.
#include "nn/batchnorm.h"
#include "nn/cast.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/simple_layers.h"
#include "zoo/zoo.h"

#include <string>

namespace dt::models {
namespace {

void conv_bn(Sequential &seq, const std::string &name, int64_t in, int64_t out, int kernel,
             int stride, Random &rng, bool relu, float bn_scale = 1.0f)
{
    seq.add<Conv2d>(name + ".conv", ConvSpec{in, out, kernel, stride, kernel / 2, false}, rng,
                    ConvInit::he_fan_out);
    // ReLU fused into the batch norm: one pass over the activations instead of two.
    seq.add<BatchNorm>(name + ".bn", out, bn_scale, relu);
}

void shortcut(Residual &block, const std::string &name, int64_t in, int64_t out, int stride,
              Random &rng)
{
    if (in != out || stride != 1)
        conv_bn(block.shortcut(), name + ".proj", in, out, 1, stride, rng, false);
}

void basic_block(Sequential &net, const std::string &name, int64_t in, int64_t out,
                 int stride, Random &rng)
{
    auto &block = net.add<Residual>(name);
    conv_bn(block.body(), name + ".a", in, out, 3, stride, rng, true);
    conv_bn(block.body(), name + ".b", out, out, 3, 1, rng, false, 0.0f);
    shortcut(block, name, in, out, stride, rng);
}

void bottleneck(Sequential &net, const std::string &name, int64_t in, int64_t width,
                int stride, Random &rng)
{
    const int64_t out = width * 4;
    auto &block = net.add<Residual>(name);
    conv_bn(block.body(), name + ".a", in, width, 1, 1, rng, true);
    conv_bn(block.body(), name + ".b", width, width, 3, stride, rng, true);
    conv_bn(block.body(), name + ".c", width, out, 1, 1, rng, false, 0.0f);
    shortcut(block, name, in, out, stride, rng);
}

// The input batch (float32) cast to the dtype the convolutions run in.
void stem_cast(Sequential &net)
{
    const dt_dtype_t act = net.compute().activation_dtype();
    if (act != DT_FLOAT32)
        net.add<Cast>("input.cast", act);
}

void head(Sequential &net, int64_t features, int classes, Random &rng)
{
    net.add<Pool>("avgpool", PoolSpec{DT_POOL_AVG_INCLUDE_PADDING, 0, 0, 0, true});
    // The classifier and the loss take float32 (a no-op for float32 networks).
    if (net.compute().activation_dtype() != DT_FLOAT32)
        net.add<Cast>("features.cast", DT_FLOAT32);
    net.add<Flatten>("flatten");
    net.add<Linear>("fc", features, classes, rng);
}

} // namespace

void build_resnet20(Sequential &net, const InputShape &in, Random &rng)
{
    stem_cast(net);
    conv_bn(net, "stem", in.channels, 16, 3, 1, rng, true);
    int64_t channels = 16;
    for (int stage = 0; stage < 3; ++stage) {
        const int64_t out = 16 << stage;
        for (int b = 0; b < 3; ++b) {
            const int stride = (stage > 0 && b == 0) ? 2 : 1;
            basic_block(net, "layer" + std::to_string(stage + 1) + "." + std::to_string(b),
                        channels, out, stride, rng);
            channels = out;
        }
    }
    head(net, channels, in.classes, rng);
}

void build_resnet50(Sequential &net, const InputShape &in, Random &rng)
{
    stem_cast(net);
    conv_bn(net, "stem", in.channels, 64, 7, 2, rng, true);
    net.add<Pool>("stem.pool", PoolSpec{DT_POOL_MAX, 3, 2, 1, false});
    const int blocks[4] = {3, 4, 6, 3};
    int64_t channels = 64;
    for (int stage = 0; stage < 4; ++stage) {
        const int64_t width = 64 << stage;
        for (int b = 0; b < blocks[stage]; ++b) {
            const int stride = (stage > 0 && b == 0) ? 2 : 1;
            bottleneck(net, "layer" + std::to_string(stage + 1) + "." + std::to_string(b),
                       channels, width, stride, rng);
            channels = width * 4;
        }
    }
    head(net, channels, in.classes, rng);
}

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
// Two 3x3 convolutions (32 and 64 channels) each followed by ReLU and 2x2 max pooling,
// then a 256-unit hidden layer: the "two convolutions with pooling" family of the
// Fashion-MNIST benchmark table, sized to train in seconds per epoch on a CPU. The
// convolutions and pooling run on bfloat16 activations under bfloat16 compute on a CPU
// (Compute::activation_dtype); the fully connected layers take float32 as before.
#include "nn/cast.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/simple_layers.h"
#include "zoo/zoo.h"

namespace dt::models {

void build_convnet(Sequential &net, const InputShape &in, Random &rng)
{
    const dt_dtype_t act = net.compute().activation_dtype();
    if (act != DT_FLOAT32)
        net.add<Cast>("input.cast", act);
    net.add<Conv2d>("conv1", ConvSpec{in.channels, 32, 3, 1, 1, true}, rng);
    net.add<Relu>("relu1");
    net.add<Pool>("pool1", PoolSpec{DT_POOL_MAX, 2, 2, 0, false});
    net.add<Conv2d>("conv2", ConvSpec{32, 64, 3, 1, 1, true}, rng);
    net.add<Relu>("relu2");
    net.add<Pool>("pool2", PoolSpec{DT_POOL_MAX, 2, 2, 0, false});
    if (act != DT_FLOAT32)
        net.add<Cast>("features.cast", DT_FLOAT32);
    net.add<Flatten>("flatten");
    const int64_t features = 64 * int64_t(in.height / 4) * (in.width / 4);
    net.add<Linear>("fc1", features, 256, rng);
    net.add<Relu>("relu3");
    net.add<Linear>("fc2", 256, in.classes, rng);
}

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
// ChainerMN's MNIST example: two hidden layers of 1000 units with ReLU.
#include "nn/linear.h"
#include "nn/simple_layers.h"
#include "zoo/zoo.h"

namespace dt::models {

void build_mlp(Sequential &net, const InputShape &in, Random &rng)
{
    const int64_t features = int64_t(in.channels) * in.height * in.width;
    net.add<Flatten>("flatten");
    net.add<Linear>("l1", features, 1000, rng);
    net.add<Relu>("relu1");
    net.add<Linear>("l2", 1000, 1000, rng);
    net.add<Relu>("relu2");
    net.add<Linear>("l3", 1000, in.classes, rng);
}

} // namespace dt::models

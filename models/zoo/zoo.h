/* SPDX-License-Identifier: Apache-2.0 */
// The model zoo: mlp (784-1000-1000-10, ChainerMN's MNIST example), convnet (two
// convolutions with pooling), resnet20 (CIFAR-style ResNet, stem adapted to the input's
// channels) and resnet50 (ImageNet bottleneck ResNet at 224x224, for the benchmark).
#pragma once

#include "nn/sequential.h"

#include <memory>
#include <string>
#include <vector>

namespace dt::models {

struct InputShape {
    int channels = 1, height = 28, width = 28, classes = 10;
};

struct Model {
    std::string name;
    InputShape input;
    std::unique_ptr<Sequential> net;

    std::vector<Parameter *> parameters() const;
    std::vector<Buffer *> buffers() const;
    size_t parameter_count() const;
};

const std::vector<std::string> &model_names();
// The input a model is made for: 1x28x28 and 10 classes (Fashion-MNIST) for all but
// resnet50 (3x224x224, 1000 classes).
InputShape default_input(const std::string &name);
// Builds a model with weights drawn from seed; throws InputError for an unknown name.
Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed);

// The builders, one per file.
void build_mlp(Sequential &net, const InputShape &in, Random &rng);
void build_convnet(Sequential &net, const InputShape &in, Random &rng);
void build_resnet20(Sequential &net, const InputShape &in, Random &rng);
void build_resnet50(Sequential &net, const InputShape &in, Random &rng);

} // namespace dt::models

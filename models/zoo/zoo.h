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
    // The layout of the images the net takes (and keeps between its layers).
    dt_tensor_layout_t layout = DT_LAYOUT_NCHW;
    // The dtype of the activations between its layers (Compute::activation_dtype for the
    // convolutional nets; the mlp stays float32).
    dt_dtype_t activations = DT_FLOAT32;

    std::vector<Parameter *> parameters() const;
    std::vector<Buffer *> buffers() const;
    size_t parameter_count() const;
};

const std::vector<std::string> &model_names();
// The input a model is made for: 1x28x28 and 10 classes (Fashion-MNIST) for all but
// resnet50 (3x224x224, 1000 classes).
InputShape default_input(const std::string &name);
// The smallest images (height and width, in pixels) model `name` can be built for: 4 for
// convnet (two unpadded 2x2 poolings), 1 for the others.
int smallest_image_side(const std::string &name);
// Throws InputError, naming the data's shape and `source` (the file it came from), when
// model `name` cannot take the images of `data`: resnet50 takes its 3x224x224 only; the
// other models are built for the data's shape, of at least smallest_image_side.
void check_model_input(const std::string &name, const InputShape &data,
                       const std::string &source);
// The layout a model runs fastest in on c: channels-last (NHWC) for the ResNets, on a CPU
// (oneDNN convolves NHWC directly instead of reordering NCHW activations to a blocked
// layout and back around every convolution) and on a GPU whose convolutions run on tensor
// cores, TF32 (the default) or bfloat16 (ResNet-50 TF32 1.06x NCHW on an H100,
// tests/gpu/run.sh); NCHW for strict float32 on a GPU (the context's tf32_convolutions
// attribute is 0: DISTTRAIN_TF32=0 or a GPU before Ampere; NHWC 0.73x) and
// for convnet (it flattens 7x7 feature maps, whose order NHWC would change).
// DISTTRAIN_LAYOUT=nchw or nhwc overrides it (nhwc only for the ResNets); anything else
// throws InputError.
dt_tensor_layout_t default_layout(const Compute &c, const std::string &name);
// "nchw" or "nhwc": the DISTTRAIN_LAYOUT value that asks for layout.
const char *layout_name(dt_tensor_layout_t layout);
// Builds a model with weights drawn from seed (in default_layout unless given); throws
// InputError for an unknown name. The weights are the same in either layout.
Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed);
Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed, dt_tensor_layout_t layout);
// Makes x the model's input for n images given as NCHW floats on the host (what the data
// sets hold), permuting them to channels-last on the host when the model wants it.
Tensor &load_input(const Compute &c, const Model &m, Tensor &x, const float *images,
                   int64_t n);

// The builders, one per file.
void build_mlp(Sequential &net, const InputShape &in, Random &rng);
void build_convnet(Sequential &net, const InputShape &in, Random &rng);
void build_resnet20(Sequential &net, const InputShape &in, Random &rng);
void build_resnet50(Sequential &net, const InputShape &in, Random &rng);

} // namespace dt::models

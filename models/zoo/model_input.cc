// SPDX-License-Identifier: Apache-2.0
#include "common/error.h"
#include "zoo/zoo.h"

namespace dt::models {
namespace {

std::string shape_of(const InputShape &in)
{
    return cat(in.channels, "x", in.height, "x", in.width);
}

} // namespace

void check_model_input(const std::string &name, const InputShape &data,
                       const std::string &source)
{
    // resnet50 is the ImageNet network of the benchmark (disttrain-bench feeds it
    // synthetic 3x224x224 images); it is not trained on images of any other shape, and
    // IDX files of Fashion-MNIST's kind hold one channel.
    const InputShape made_for = default_input(name);
    if (name == "resnet50" &&
        (data.channels != made_for.channels || data.height != made_for.height ||
         data.width != made_for.width))
        throw_input_error("model ", name, " takes ", shape_of(made_for), " images, not the ",
                          shape_of(data), " ones of ", source, "; use disttrain-bench --model ",
                          name, " for a synthetic run, or another model: mlp, convnet, "
                          "resnet20");
}

} // namespace dt::models

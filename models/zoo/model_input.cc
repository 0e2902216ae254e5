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

int smallest_image_side(const std::string &name)
{
    // convnet's poolings are unpadded 2x2 windows of stride 2: the second needs 2x2 maps
    // after the first has halved the images. The ResNets pad every window (their strided
    // 3x3 and 1x1 convolutions map 1 pixel to 1) and end in a global pooling; the mlp
    // flattens whatever it gets.
    return name == "convnet" ? 4 : 1;
}

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
    // Found here, before the job is joined, rather than by the first layer that cannot
    // take them at the first step.
    const int side = smallest_image_side(name);
    if (data.height < side || data.width < side)
        throw_input_error("model ", name, " takes images of at least ", side, "x", side,
                          " pixels, not the ", shape_of(data), " ones of ", source,
                          "; use larger images, or --model mlp or resnet20, which take "
                          "images of any size");
}

} // namespace dt::models

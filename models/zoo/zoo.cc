// SPDX-License-Identifier: Apache-2.0
#include "zoo/zoo.h"

#include "common/error.h"
#include "common/random.h"

#include <cstdlib>

namespace dt::models {

std::vector<Parameter *> Model::parameters() const
{
    std::vector<Parameter *> out;
    net->parameters(out);
    return out;
}

std::vector<Buffer *> Model::buffers() const
{
    std::vector<Buffer *> out;
    net->buffers(out);
    return out;
}

size_t Model::parameter_count() const
{
    size_t n = 0;
    for (Parameter *p : parameters())
        n += p->value.numel();
    return n;
}

const std::vector<std::string> &model_names()
{
    static const std::vector<std::string> names = {"mlp", "convnet", "resnet20", "resnet50"};
    return names;
}

InputShape default_input(const std::string &name)
{
    if (name == "resnet50")
        return {3, 224, 224, 1000};
    return {};
}

namespace {

bool channels_last_capable(const std::string &name)
{
    return name == "resnet20" || name == "resnet50";
}

// Strict float32 convolutions on a GPU (DISTTRAIN_TF32=0, or a GPU older than Ampere,
// outside --bf16): no tensor cores, where cuDNN's NHWC kernels lose to NCHW (ResNet-50 695
// against 947 images/sec on an H100).
bool strict_float32_on_gpu(const Compute &c)
{
    return c.tensor_memory() == DT_MEMORY_DEVICE && !c.bf16_active() && !c.tf32_convolutions();
}

} // namespace

dt_tensor_layout_t default_layout(const Compute &c, const std::string &name)
{
    if (const char *env = std::getenv("DISTTRAIN_LAYOUT"); env != nullptr && *env != 0) {
        const std::string v = env;
        if (v == "nchw")
            return DT_LAYOUT_NCHW;
        if (v != "nhwc")
            throw_input_error("DISTTRAIN_LAYOUT=", v, " is unknown; use nchw or nhwc");
        return channels_last_capable(name) ? DT_LAYOUT_NHWC : DT_LAYOUT_NCHW;
    }
    return channels_last_capable(name) && !strict_float32_on_gpu(c) ? DT_LAYOUT_NHWC
                                                                     : DT_LAYOUT_NCHW;
}

const char *layout_name(dt_tensor_layout_t layout)
{
    return layout == DT_LAYOUT_NHWC ? "nhwc" : "nchw";
}

Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed)
{
    return build_model(c, name, input, seed, default_layout(c, name));
}

Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed, dt_tensor_layout_t layout)
{
    Model m{name, input, std::make_unique<Sequential>(c, name), layout,
            name == "mlp" ? DT_FLOAT32 : c.activation_dtype()};
    Random rng(mix_seed(seed, 0x5eed));
    if (name == "mlp")
        build_mlp(*m.net, input, rng);
    else if (name == "convnet")
        build_convnet(*m.net, input, rng);
    else if (name == "resnet20")
        build_resnet20(*m.net, input, rng);
    else if (name == "resnet50")
        build_resnet50(*m.net, input, rng);
    else
        throw_input_error("unknown model '", name,
                          "'; choose one of mlp, convnet, resnet20, resnet50");
    m.net->set_input_grad(false);
    return m;
}

Tensor &load_input(const Compute &c, const Model &m, Tensor &x, const float *images, int64_t n)
{
    const InputShape &in = m.input;
    ensure(x, c, activation_desc(n, in.channels, in.height, in.width, m.layout), m.layout);
    if (m.layout == DT_LAYOUT_NCHW || in.channels == 1) { // one channel: the same bytes
        x.copy_from_host(c, images);
        return x;
    }
    const int64_t plane = int64_t(in.height) * in.width, ch = in.channels;
    std::vector<float> nhwc(size_t(n * ch * plane));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < ch; ++k)
            for (int64_t p = 0; p < plane; ++p)
                nhwc[size_t((i * plane + p) * ch + k)] = images[(i * ch + k) * plane + p];
    x.copy_from_host(c, nhwc.data());
    return x;
}

} // namespace dt::models

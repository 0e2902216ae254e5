// SPDX-License-Identifier: Apache-2.0
#include "zoo/zoo.h"

#include "common/error.h"
#include "common/random.h"

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

Model build_model(const Compute &c, const std::string &name, const InputShape &input,
                  uint64_t seed)
{
    Model m{name, input, std::make_unique<Sequential>(c, name)};
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

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
#include "train/model_state.h"

#include "common/error.h"

#include <cstring>

namespace dt::models {

void save_model(const Compute &c, const Model &model, CheckpointState &out)
{
    out.put_string("model", model.name);
    for (Parameter *p : model.parameters())
        out.put<float>("model/" + p->name, p->value.to_vector(c));
    for (Buffer *b : model.buffers())
        out.put<float>("model/" + b->name, b->value.to_vector(c));
}

void load_model(const Compute &c, Model &model, const CheckpointState &in)
{
    const std::string name = in.get_string("model");
    if (name != model.name)
        throw_input_error("the checkpoint holds model '", name, "', not '", model.name,
                          "': pass --model ", name, " or another --checkpoint-dir");
    std::vector<float> host;
    auto restore = [&](const std::string &entry, const Tensor &t) {
        host.resize(t.numel());
        in.get_into("model/" + entry, host.data(), t.bytes());
        t.copy_from_host(c, host.data());
    };
    for (Parameter *p : model.parameters())
        restore(p->name, p->value);
    for (Buffer *b : model.buffers())
        restore(b->name, b->value);
}

std::vector<Tensor> model_tensors(const Model &model)
{
    std::vector<Tensor> out;
    for (Parameter *p : model.parameters())
        out.push_back(p->value);
    for (const Tensor &t : buffer_tensors(model))
        out.push_back(t);
    return out;
}

uint64_t model_checksum(const Compute &c, const Model &model)
{
    uint64_t h = 14695981039346656037ull;
    for (const Tensor &t : model_tensors(model)) {
        const std::vector<float> host = t.to_vector(c);
        const auto *bytes = reinterpret_cast<const unsigned char *>(host.data());
        for (size_t i = 0; i < host.size() * sizeof(float); ++i)
            h = (h ^ bytes[i]) * 1099511628211ull;
    }
    return h;
}

std::vector<Tensor> buffer_tensors(const Model &model)
{
    std::vector<Tensor> out;
    for (Buffer *b : model.buffers())
        out.push_back(b->value);
    return out;
}

} // namespace dt::models

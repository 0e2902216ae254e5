// SPDX-License-Identifier: Apache-2.0
#include "nn/sequential.h"

#include "common/error.h"
#include "nn/profile.h"

#include <optional>
#include <stdexcept>

namespace dt::models {

Tensor Sequential::forward(const Tensor &x, bool training)
{
    return run_forward(x, nullptr, training);
}

Tensor Sequential::forward_add_relu(const Tensor &x, const Tensor &z, bool training)
{
    if (!fuses_add_relu())
        throw std::logic_error(cat(name_, " does not end with a layer that adds a shortcut"));
    return run_forward(x, &z, training);
}

Tensor Sequential::run_forward(const Tensor &x, const Tensor *z, bool training)
{
    Tensor h = x;
    for (size_t i = 0; i < layers_.size(); ++i) {
        Layer &layer = *layers_[i];
        const bool adds = z != nullptr && i + 1 == layers_.size();
        // Containers are not timed themselves: their leaves are.
        const bool leaf = dynamic_cast<Sequential *>(&layer) == nullptr &&
                          dynamic_cast<Residual *>(&layer) == nullptr;
        std::optional<ProfileScope> scope;
        if (leaf && LayerProfile::enabled())
            scope.emplace(layer.name(), false);
        h = adds ? layer.forward_add_relu(h, *z, training) : layer.forward(h, training);
    }
    return h;
}

Tensor Sequential::backward(const Tensor &dy, const GradReady &ready)
{
    return backward_sum({dy, {}}, false, ready).a;
}

GradSum Sequential::backward_sum(const GradSum &dy, bool want_sum, const GradReady &ready)
{
    GradSum g = dy;
    for (size_t i = layers_.size(); i-- > 0;) {
        Layer &layer = *layers_[i];
        // A sum only where the layer that takes this one's input gradient can take it.
        const bool next_takes = i > 0 ? layers_[i - 1]->takes_sum() : want_sum;
        const bool leaf = dynamic_cast<Sequential *>(&layer) == nullptr &&
                          dynamic_cast<Residual *>(&layer) == nullptr;
        if (!leaf) {
            g = layer.backward_sum(g, next_takes && layer.gives_sum(), ready);
            continue;
        }
        // A leaf takes no sum: the container before it was not asked for one.
        if (g.is_sum())
            throw std::logic_error(cat(layer.name(), " was handed a gradient as a sum"));
        if (!LayerProfile::enabled()) {
            g = {layer.backward(g.a, ready), {}};
            continue;
        }
        ProfileScope scope(layer.name(), true);
        g = {layer.backward(g.a, ready), {}};
    }
    return g;
}

void Sequential::parameters(std::vector<Parameter *> &out)
{
    for (auto &layer : layers_)
        layer->parameters(out);
}

void Sequential::buffers(std::vector<Buffer *> &out)
{
    for (auto &layer : layers_)
        layer->buffers(out);
}

void Sequential::set_input_grad(bool needed)
{
    input_grad_ = needed;
    // Without the input's gradient, a leading layer with no parameters (Flatten, ReLU,
    // pooling) needs no gradient of its output either, so the layer after it needs none
    // of its input: the mlp's first Linear comes after Flatten, and computed dx = dy W
    // (a sixth of the step's FLOPs) for nobody. The first layer with parameters needs
    // its output's gradient, so every layer after it computes its input's.
    bool need = needed;
    for (auto &layer : layers_) {
        layer->set_input_grad(need);
        if (!need) {
            std::vector<Parameter *> own;
            layer->parameters(own);
            need = !own.empty();
        }
    }
}

Residual::Residual(const Compute &c, std::string name)
    : Layer(c, name), body_(c, name + ".body"), shortcut_(c, name + ".shortcut"),
      add_name_(name + ".add")
{
}

Tensor Residual::forward(const Tensor &x, bool training)
{
    // The shortcut first: a body that ends with a batch norm adds it there, so the block's
    // output is written once (the same bits as the add below).
    const Tensor b = shortcut_.empty() ? x : shortcut_.forward(x, training);
    if (body_.fuses_add_relu()) {
        out_ = body_.forward_add_relu(x, b, training);
        return out_;
    }
    const Tensor a = body_.forward(x, training);
    ProfileScope scope(add_name_, false);
    ensure(sum_, c_, a.desc(), a.layout());
    check(dt_compute_add_relu(c_.get(), &a.desc(), a.data(), b.data(), sum_.data()),
          "residual add+relu");
    out_ = sum_;
    return out_;
}

Tensor Residual::backward(const Tensor &dy, const GradReady &ready)
{
    return backward_sum({dy, {}}, false, ready).a;
}

GradSum Residual::backward_sum(const GradSum &dy, bool want_sum, const GradReady &ready)
{
    {
        ProfileScope scope(add_name_, true);
        const Tensor &g = dy.a;
        ensure(dsum_, c_, g.desc(), g.layout());
        if (dy.is_sum())
            check(dt_compute_relu_backward_sum(c_.get(), &g.desc(), out_.data(), g.data(),
                                               dy.b.data(), dsum_.data()),
                  "residual relu backward of the next block's branches");
        else
            check(dt_compute_relu_backward(c_.get(), &g.desc(), out_.data(), g.data(),
                                           dsum_.data()),
                  "residual relu backward");
    }
    // The shortcut first: its projection is shallow, so its gradients are ready early.
    const Tensor ds = shortcut_.empty() ? dsum_ : shortcut_.backward(dsum_, ready);
    const Tensor db = body_.backward(dsum_, ready);
    if (!input_grad_)
        return {};
    // Each branch's gradient stays valid until that branch's next backward, after the
    // block before this one has summed them.
    if (want_sum)
        return {db, ds};
    ProfileScope scope(add_name_, true);
    ensure(dx_, c_, db.desc(), db.layout());
    check(dt_compute_add(c_.get(), &db.desc(), db.data(), ds.data(), dx_.data()),
          "residual gradient add");
    return {dx_, {}};
}

void Residual::parameters(std::vector<Parameter *> &out)
{
    body_.parameters(out);
    shortcut_.parameters(out);
}

void Residual::buffers(std::vector<Buffer *> &out)
{
    body_.buffers(out);
    shortcut_.buffers(out);
}

void Residual::set_input_grad(bool needed)
{
    input_grad_ = needed;
    body_.set_input_grad(needed);
    shortcut_.set_input_grad(needed);
}

} // namespace dt::models

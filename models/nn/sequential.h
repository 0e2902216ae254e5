/* SPDX-License-Identifier: Apache-2.0 */
// Containers: a chain of layers, and the residual block y = relu(body(x) + shortcut(x))
// of ResNets (identity shortcut, or a projection when the shape changes). A body that
// ends with a batch norm adds the shortcut and applies the ReLU in that batch norm's
// pass.
#pragma once

#include "nn/layer.h"

#include <memory>

namespace dt::models {

class Sequential : public Layer {
public:
    using Layer::Layer;

    template <typename L, typename... Args>
    L &add(Args &&...args)
    {
        auto layer = std::make_unique<L>(c_, std::forward<Args>(args)...);
        L &ref = *layer;
        layers_.push_back(std::move(layer));
        return ref;
    }
    void append(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }
    bool empty() const { return layers_.empty(); }

    Tensor forward(const Tensor &x, bool training) override;
    // Where the last layer ends a residual block with the shortcut's add and ReLU.
    bool fuses_add_relu() const override
    {
        return !layers_.empty() && layers_.back()->fuses_add_relu();
    }
    Tensor forward_add_relu(const Tensor &x, const Tensor &z, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;
    // A sum goes in to the last layer and comes out of the first, where they take and
    // give one; between its layers, each residual block hands a sum to the one before it.
    bool takes_sum() const override { return !layers_.empty() && layers_.back()->takes_sum(); }
    bool gives_sum() const override { return !layers_.empty() && layers_.front()->gives_sum(); }
    GradSum backward_sum(const GradSum &dy, bool want_sum, const GradReady &ready) override;
    void parameters(std::vector<Parameter *> &out) override;
    void buffers(std::vector<Buffer *> &out) override;
    // Only the leading layers, up to the first with parameters, may skip their input
    // gradient.
    void set_input_grad(bool needed) override;

private:
    // forward() and forward_add_relu(): z is the shortcut the last layer adds, or null.
    Tensor run_forward(const Tensor &x, const Tensor *z, bool training);

    std::vector<std::unique_ptr<Layer>> layers_;
};

class Residual : public Layer {
public:
    // body and shortcut are filled by the caller; an empty shortcut is the identity.
    Residual(const Compute &c, std::string name);
    Sequential &body() { return body_; }
    Sequential &shortcut() { return shortcut_; }

    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;
    // Its output's gradient may be a sum (summed inside the ReLU's gradient); its input's
    // is the sum of its branches' gradients, which it returns unsummed when asked.
    bool takes_sum() const override { return true; }
    bool gives_sum() const override { return input_grad_; }
    GradSum backward_sum(const GradSum &dy, bool want_sum, const GradReady &ready) override;
    void parameters(std::vector<Parameter *> &out) override;
    void buffers(std::vector<Buffer *> &out) override;
    void set_input_grad(bool needed) override;

private:
    Sequential body_, shortcut_;
    std::string add_name_; // "layer1.0.add": the profile's name for the add and ReLU
    Tensor sum_, dsum_, dx_;
    Tensor out_; // the block's output: sum_, or the body's last batch norm's where it fuses
};

} // namespace dt::models

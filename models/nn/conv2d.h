/* SPDX-License-Identifier: Apache-2.0 */
// 2-D convolution over NCHW activations with OIHW weights and an optional bias.
#pragma once

#include "nn/layer.h"

namespace dt::models {

struct ConvSpec {
    int64_t in = 1, out = 1;
    int kernel = 3, stride = 1, padding = 0;
    bool bias = true;
};

enum class ConvInit {
    pytorch_default, // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch.nn.Conv2d
    he_fan_out,      // N(0, sqrt(2 / fan_out)), as torchvision's ResNets
};

class Conv2d : public Layer {
public:
    Conv2d(const Compute &c, std::string name, const ConvSpec &spec, Random &rng,
           ConvInit init = ConvInit::pytorch_default);

    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;
    void parameters(std::vector<Parameter *> &out) override;

private:
    ConvSpec s_;
    dt_conv_params_t p_{};
    Parameter w_, b_;
    Tensor x_, y_, dx_;
};

} // namespace dt::models

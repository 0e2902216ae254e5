/* SPDX-License-Identifier: Apache-2.0 */
// Layers without parameters: ReLU, Flatten and pooling.
#pragma once

#include "nn/layer.h"

namespace dt::models {

class Relu : public Layer {
public:
    using Layer::Layer;
    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;

private:
    Tensor y_, dx_;
};

// (N, C, H, W) -> (N, C*H*W); shares memory with its input.
class Flatten : public Layer {
public:
    using Layer::Layer;
    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;

private:
    dt_tensor_desc_t in_{};
    dt_tensor_layout_t in_layout_ = DT_LAYOUT_NCHW;
};

struct PoolSpec {
    dt_pool_kind_t kind = DT_POOL_MAX;
    int kernel = 2, stride = 2, padding = 0;
    bool global = false; // kernel = the input's H x W (global average pooling)
};

class Pool : public Layer {
public:
    Pool(const Compute &c, std::string name, const PoolSpec &spec);
    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;

private:
    dt_pool_params_t params_for(const Tensor &x) const;
    PoolSpec s_;
    dt_pool_params_t p_{};
    Tensor x_, y_, dx_, workspace_;
};

} // namespace dt::models

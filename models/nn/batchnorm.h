/* SPDX-License-Identifier: Apache-2.0 */
// Batch normalisation over the channels of (N, C) or (N, C, H, W) activations, with
// PyTorch's defaults (epsilon 1e-5, momentum 0.1, scale 1, shift 0). Training uses the
// batch's statistics and updates the running ones; evaluation uses the running ones.
// With relu, the layer is batch norm then ReLU in one pass (the compute API's fused
// batch norm): the same results as a Relu layer after it, with the same parameters and
// checkpoint names (ReLU has none).
#pragma once

#include "nn/layer.h"

namespace dt::models {

class BatchNorm : public Layer {
public:
    BatchNorm(const Compute &c, std::string name, int64_t channels, float init_scale = 1.0f,
              bool relu = false);

    Tensor forward(const Tensor &x, bool training) override;
    // Without its own ReLU it can end a residual block: max(batch norm of x + z, 0).
    bool fuses_add_relu() const override { return !relu_; }
    Tensor forward_add_relu(const Tensor &x, const Tensor &z, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;
    void parameters(std::vector<Parameter *> &out) override;
    void buffers(std::vector<Buffer *> &out) override;

private:
    // forward() and forward_add_relu(): z is the shortcut, or null for none.
    Tensor run_forward(const Tensor &x, const Tensor *z, bool training);

    static constexpr float kEpsilon = 1e-5f;
    static constexpr float kMomentum = 0.1f;
    int64_t channels_;
    bool relu_;
    Parameter scale_, shift_;
    Buffer running_mean_, running_var_;
    Tensor save_mean_, save_invstd_;
    Tensor x_, y_, dx_;
};

} // namespace dt::models

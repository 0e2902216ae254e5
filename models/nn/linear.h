/* SPDX-License-Identifier: Apache-2.0 */
// Fully connected layer y = x W^T + b with W (out, in) as in PyTorch, x (N, in).
//
// With bfloat16 compute on a CPU plugin the layer converts W, x and dy itself, once each
// per step, and multiplies the bfloat16 copies: the plugin would convert W for forward
// and again for dx, x again for dW and dy for both products of backward.
#pragma once

#include "nn/layer.h"

namespace dt::models {

class Linear : public Layer {
public:
    // PyTorch's default initialisation: U(-1/sqrt(in), 1/sqrt(in)) for W and b.
    Linear(const Compute &c, std::string name, int64_t in, int64_t out, Random &rng);

    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;
    void parameters(std::vector<Parameter *> &out) override;

private:
    int64_t in_, out_;
    bool bf16_; // multiply bfloat16 copies (x16_, w16_, dy16_) made here
    Parameter w_, b_;
    Tensor x_, y_, dx_;
    Tensor x16_, w16_, dy16_;
};

} // namespace dt::models

/* SPDX-License-Identifier: Apache-2.0 */
// A change of the activations' dtype at a model's edge: the float32 input batch to the
// bfloat16 a network computes in, and its pooled features back to float32 for the
// classifier and the loss. The backward converts the gradient the other way. A tensor
// already in the target dtype passes through untouched (no copy).
#pragma once

#include "nn/layer.h"

namespace dt::models {

class Cast : public Layer {
public:
    Cast(const Compute &c, std::string name, dt_dtype_t to);
    Tensor forward(const Tensor &x, bool training) override;
    Tensor backward(const Tensor &dy, const GradReady &ready) override;

private:
    dt_dtype_t to_;
    dt_dtype_t from_ = DT_FLOAT32; // the dtype of the last forward's input
    Tensor y_, dx_;
};

} // namespace dt::models

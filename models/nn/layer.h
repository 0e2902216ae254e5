/* SPDX-License-Identifier: Apache-2.0 */
// The layer interface: forward, backward, and the parameters a layer owns.
//
// backward() reports each parameter through a GradReady callback the moment its
// gradient is final. The trainer starts that gradient's allreduce right there, so the
// communication of the last layers overlaps the backward pass of the earlier ones (the
// reason Horovod and PyTorch DDP hook gradients the same way).
#pragma once

#include "nn/tensor.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt::models {

class Random;

struct Parameter {
    std::string name; // "conv1.weight": names the allreduce and the checkpoint entry
    Tensor value;
    Tensor grad;
};

using GradReady = std::function<void(Parameter &)>;

// The gradient of a layer's output or input as a sum a + b, or a alone (b empty). A
// residual block hands its input's gradient back as its two branches' gradients when the
// layer that takes it is a residual block too, which adds them inside its ReLU's gradient
// (dt_compute_relu_backward_sum): one pass over the tensor instead of two, the same bits.
struct GradSum {
    Tensor a, b;
    bool is_sum() const { return !b.empty(); }
};

// Non-trainable state saved in checkpoints (batch-norm running statistics).
struct Buffer {
    std::string name;
    Tensor value;
};

class Layer {
public:
    Layer(const Compute &compute, std::string name) : c_(compute), name_(std::move(name)) {}
    virtual ~Layer() = default;
    Layer(const Layer &) = delete;
    Layer &operator=(const Layer &) = delete;

    const std::string &name() const { return name_; }
    const Compute &compute() const { return c_; }

    // The output for input x. With training set, the layer keeps what backward needs
    // (the returned tensor stays valid until the next forward).
    virtual Tensor forward(const Tensor &x, bool training) = 0;

    // The gradient of the input, from the gradient of the output of the last training
    // forward; an empty tensor when the input gradient is not needed (first layer).
    // Calls ready(p) for each parameter p once p.grad holds its final value.
    virtual Tensor backward(const Tensor &dy, const GradReady &ready) = 0;

    // backward() for an output gradient that may be a sum, which only a layer whose
    // takes_sum() is true is given; want_sum asks for the input's gradient as a sum, which
    // only a layer whose gives_sum() is true may return. A plain layer takes neither.
    virtual bool takes_sum() const { return false; }
    virtual bool gives_sum() const { return false; }
    virtual GradSum backward_sum(const GradSum &dy, bool want_sum, const GradReady &ready)
    {
        (void)want_sum;
        return {backward(dy.a, ready), {}};
    }

    // The end of a residual block in one pass: max(forward(x) + z, 0), for a layer whose
    // forward ends with a batch norm (fuses_add_relu() true), so that the block's output
    // is written once (dt_compute_batchnorm_add_relu_*). backward() is unchanged: the
    // ReLU's gradient is the block's, which hands the layer the gradient of its forward.
    virtual bool fuses_add_relu() const { return false; }
    virtual Tensor forward_add_relu(const Tensor &, const Tensor &, bool)
    {
        throw std::logic_error(name_ + " has no forward with an add and ReLU fused");
    }

    virtual void parameters(std::vector<Parameter *> &) {}
    virtual void buffers(std::vector<Buffer *> &) {}

    // False for the first layer of a model: nobody needs the gradient of the data.
    virtual void set_input_grad(bool needed) { input_grad_ = needed; }

protected:
    const Compute &c_;
    std::string name_;
    bool input_grad_ = true;
};

// Parameter initialisation from the portable generator, so that a seed gives the same
// model everywhere (rank 0's copy is broadcast anyway).
void init_uniform(const Compute &c, const Tensor &t, double bound, Random &rng);
void init_normal(const Compute &c, const Tensor &t, double stddev, Random &rng);

} // namespace dt::models

/* SPDX-License-Identifier: Apache-2.0 */
// Optimizers on the compute plugin's fused updates: SGD (plain, momentum, Nesterov,
// weight decay; torch.optim.SGD) and Adam (torch.optim.Adam, or AdamW with decoupled
// weight decay). Their state is saved in and restored from checkpoints.
//
// The optimizer moves every parameter's value and gradient into one flat buffer each
// (the Parameter tensors become windows of them, so layers, checkpoints and gradient
// allreduce see no difference) and keeps its state flat beside them: a step is then one
// fused, vectorised pass over all parameters instead of one call per tensor. A parameter
// belongs to the last optimizer made over it: an earlier one keeps updating its own
// (now detached) buffers. Tensors copied from a parameter before the optimizer was made
// still point at the old memory; take them afterwards.
#pragma once

#include "nn/layer.h"

#include <string>
#include <vector>

namespace dt::models {

class CheckpointState;

enum class OptimizerKind { sgd, momentum, nesterov, adam, adamw };

struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::momentum;
    double momentum = 0.9;
    double weight_decay = 0;
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

// "sgd", "momentum", "nesterov", "adam", "adamw"; throws InputError otherwise.
OptimizerKind parse_optimizer(const std::string &name);
const char *optimizer_name(OptimizerKind kind);

class Optimizer {
public:
    Optimizer(const Compute &c, const OptimizerConfig &config, std::vector<Parameter *> params);

    // One update of every parameter from its (already averaged) gradient.
    void step(double lr);
    int64_t steps() const { return steps_; }
    void set_steps(int64_t steps) { steps_ = steps; } // after a resume, on every rank

    void save(CheckpointState &out) const;
    void load(const CheckpointState &in);
    // The state tensors, for broadcasting from rank 0 after a resume.
    std::vector<Tensor> state() const;

private:
    const Compute &c_;
    OptimizerConfig config_;
    std::vector<Parameter *> params_;
    // Flat buffers: values, gradients, momentum buffer (SGD) or first/second moments
    // (Adam), each parameter at the same offset in all of them.
    Tensor values_, grads_, m_flat_, v_flat_;
    size_t count_ = 0;                // floats in each flat buffer (with alignment padding)
    std::vector<Tensor> m_, v_;       // per-parameter windows of m_flat_ / v_flat_
    int64_t steps_ = 0;
};

} // namespace dt::models

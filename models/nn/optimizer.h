/* SPDX-License-Identifier: Apache-2.0 */
// Optimizers on the compute plugin's fused updates: SGD (plain, momentum, Nesterov,
// weight decay; torch.optim.SGD) and Adam (torch.optim.Adam, or AdamW with decoupled
// weight decay). Their state is saved in and restored from checkpoints.
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
    std::vector<Tensor> m_, v_; // momentum buffer (SGD) or first/second moments (Adam)
    int64_t steps_ = 0;
};

} // namespace dt::models

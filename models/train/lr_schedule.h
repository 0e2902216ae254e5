/* SPDX-License-Identifier: Apache-2.0 */
// Learning-rate schedule for data-parallel training (Goyal et al., "Accurate, Large
// Minibatch SGD"): the linear scaling rule multiplies the base rate by
// global batch / base batch, and a linear warm-up ramps from base rate / warm-up factor
// to the scaled rate over the first warm-up steps, after which a constant, step or
// cosine decay applies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt::models {

enum class Decay { constant, step, cosine };

struct LrScheduleConfig {
    double base_lr = 0.01;
    uint64_t base_batch = 0;   // 0: no scaling (the global batch is the base batch)
    uint64_t global_batch = 1;
    uint64_t warmup_steps = 0;
    uint64_t total_steps = 1;
    Decay decay = Decay::constant;
    std::vector<uint64_t> milestones; // steps where Decay::step multiplies by gamma
    double gamma = 0.1;
};

class LrSchedule {
public:
    explicit LrSchedule(LrScheduleConfig config);

    // Learning rate of optimizer step `step` (0-based).
    double at(uint64_t step) const;
    // base_lr x global_batch / base_batch.
    double peak() const { return peak_; }

private:
    LrScheduleConfig c_;
    double peak_;
};

// "constant", "step" or "cosine"; throws InputError otherwise.
Decay parse_decay(const std::string &name);

} // namespace dt::models

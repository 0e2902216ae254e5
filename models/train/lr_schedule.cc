// SPDX-License-Identifier: Apache-2.0
#include "train/lr_schedule.h"

#include "common/error.h"

#include <algorithm>
#include <cmath>

namespace dt::models {

LrSchedule::LrSchedule(LrScheduleConfig config) : c_(std::move(config))
{
    const double base = c_.base_batch == 0 ? double(c_.global_batch) : double(c_.base_batch);
    peak_ = c_.base_lr * double(c_.global_batch) / base;
    std::sort(c_.milestones.begin(), c_.milestones.end());
}

double LrSchedule::at(uint64_t step) const
{
    if (step < c_.warmup_steps) {
        // From base_lr (the rate known to work for the base batch) up to the peak.
        const double t = double(step + 1) / double(c_.warmup_steps);
        return c_.base_lr + (peak_ - c_.base_lr) * t;
    }
    switch (c_.decay) {
    case Decay::constant:
        return peak_;
    case Decay::step: {
        const auto passed = std::upper_bound(c_.milestones.begin(), c_.milestones.end(), step) -
                            c_.milestones.begin();
        return peak_ * std::pow(c_.gamma, double(passed));
    }
    case Decay::cosine: {
        const double span = double(std::max<uint64_t>(1, c_.total_steps - c_.warmup_steps));
        const double t = std::min(1.0, double(step - c_.warmup_steps) / span);
        return peak_ * 0.5 * (1.0 + std::cos(3.141592653589793 * t));
    }
    }
    return peak_;
}

Decay parse_decay(const std::string &name)
{
    if (name == "constant")
        return Decay::constant;
    if (name == "step")
        return Decay::step;
    if (name == "cosine")
        return Decay::cosine;
    throw_input_error("unknown learning-rate decay '", name,
                      "'; choose constant, step or cosine");
}

} // namespace dt::models

/* SPDX-License-Identifier: Apache-2.0 */
// The training loop of disttrain-train: sharded data, forward, backward with gradients
// averaged across ranks as they appear, optimizer step, per-epoch validation and
// reports, checkpoints and resume.
#pragma once

#include "data/dataset.h"
#include "data/sampler.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/distributed.h"
#include "train/lr_schedule.h"
#include "train/options.h"
#include "train/progress.h"
#include "train/report.h"
#include "zoo/zoo.h"

#include <chrono>
#include <optional>

namespace dt::models {

// Where training stands; what a checkpoint records besides the tensors.
struct Position {
    uint64_t epoch = 0;       // epoch in progress, 0-based
    uint64_t step = 0;        // next step within it
    uint64_t global_step = 0; // optimizer steps done
    // Sums over the current epoch so far, over all ranks.
    double loss_sum = 0, correct = 0, seen = 0;
    double elapsed = 0;    // seconds of training before this process started
    double epoch_time = 0; // seconds spent on the current epoch's steps
};

class Trainer {
public:
    Trainer(const TrainOptions &options, const Dataset &train, const Dataset &test,
            Compute &compute, Distributed &dist);
    void run();

private:
    // Batch buffers on the host and in compute memory.
    struct Batch {
        std::vector<float> images;
        std::vector<int32_t> labels;
        Tensor x, y;
    };
    void load_batch(const Dataset &data, std::span<const uint32_t> indices);
    void restore_or_broadcast();
    void train_epoch();
    // Validation loss and accuracy over the whole test set, sharded across ranks.
    std::pair<double, double> evaluate();
    void save(bool end_of_epoch);
    double seconds_since_start() const;

    const TrainOptions &o_;
    const Dataset &train_, &test_;
    Compute &c_;
    Distributed &dist_;
    Model model_;
    Optimizer optimizer_;
    SoftmaxCrossEntropy loss_;
    ShardedSampler sampler_;
    LrSchedule schedule_;
    GradientSync sync_;
    Batch batch_;
    Position pos_;
    ProgressBar progress_;
    ReportTable table_;
    MetricsLog metrics_;
    std::chrono::steady_clock::time_point start_;
    std::vector<Parameter *> params_;
};

} // namespace dt::models

/* SPDX-License-Identifier: Apache-2.0 */
// The training loop of disttrain-train: sharded data, forward, backward with gradients
// averaged across ranks as they appear, optimizer step, per-epoch validation and
// reports, checkpoints and resume; with --elastic, lost ranks and replacements
// (trainer_elastic.cc).
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

#include <disttrain/elastic.hpp>

#include <array>
#include <chrono>
#include <memory>
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

// A Position as the 8 doubles checkpoints and the elastic state keep.
std::array<double, 8> pack_position(const Position &p);
Position unpack_position(const std::array<double, 8> &v);

// The learning-rate schedule of these options over this sampler's epochs.
LrScheduleConfig schedule_config(const TrainOptions &o, const ShardedSampler &s);

// True in a replacement process that joins a running elastic job (DISTTRAIN_ELASTIC_JOIN,
// set by disttrainrun --max-restarts).
bool joining_elastic_job();

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
    // Refuses (InputError on every rank) a job whose ranks were started with settings
    // other than rank 0's (shared_settings); each such rank names what differs.
    void check_same_settings();
    void restore_or_broadcast();
    void train_epoch();
    // Adds this rank's metric sums since the last fold into pos_ (a collective).
    void fold_metrics();
    void report(const EpochReport &rep);

    // Elastic training (trainer_elastic.cc).
    void run_elastic();
    // At each start of the elastic loop, after the state was synced: position, optimizer
    // step count and data shard from the state and the (maybe new) rank and size.
    void enter_elastic();
    // Folds nothing; copies pos_ into the state and commits it (a collective).
    void commit();
    // After each optimizer step: the re-form's line once its first step is done.
    void after_step();
    // Validation loss and accuracy over the whole test set, sharded across ranks.
    std::pair<double, double> evaluate();
    // Writes the checkpoint on rank 0 (a collective), unless training diverged.
    void save(bool end_of_epoch);
    // Ends every rank with exit status 1 (ReportedError on rank 0, which says why): training
    // diverged in `epoch` (1-based), `what` says how. Called by every rank at the same point,
    // before the checkpoint that would replace the last good one.
    [[noreturn]] void diverged(uint64_t epoch, const std::string &what);
    // A collective every rank reaches once the ranks with an error to print have printed
    // it: a rank that exits first makes the launcher stop the rest, which could cut a
    // message short.
    void meet_after_messages(const char *name);
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
    // This rank's sums since the last fold_metrics().
    double loss_sum_ = 0, correct_ = 0, seen_ = 0;

    // Elastic: the state committed in memory (model, optimizer, position_), and the
    // re-form in progress: when it began, from what size, why.
    std::unique_ptr<disttrain::elastic::state> elastic_;
    std::array<double, 8> position_{};
    uint64_t global_batch_ = 0; // the job's, kept when its size changes
    // Time this rank spent in mid-epoch commits (metric fold, joiners' poll, copy).
    double commit_seconds_ = 0;
    uint64_t commits_ = 0;
    struct Reform {
        bool pending = false;
        bool grew = false;
        int size_before = 0;
        std::chrono::steady_clock::time_point seen, reformed;
    } reform_;
};

} // namespace dt::models

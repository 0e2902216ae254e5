// SPDX-License-Identifier: Apache-2.0
#include "train/trainer.h"

#include "common/error.h"
#include "train/fault.h"
#include "train/model_state.h"
#include "train/step.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dt::models {
namespace {

// a * b, or the largest uint64_t where that overflows (a step count no run reaches).
uint64_t saturating_product(uint64_t a, uint64_t b)
{
    uint64_t p;
    return __builtin_mul_overflow(a, b, &p) ? ~uint64_t{0} : p;
}

OptimizerConfig optimizer_config(const TrainOptions &o)
{
    OptimizerConfig c;
    c.kind = parse_optimizer(o.optimizer);
    c.momentum = o.momentum;
    c.weight_decay = o.weight_decay;
    return c;
}

std::vector<uint64_t> parse_milestones(const std::string &text, uint64_t steps_per_epoch)
{
    std::vector<uint64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        char *end = nullptr;
        const unsigned long long e = std::strtoull(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0')
            throw_input_error("--milestones '", text, "' is not a list of epochs like 10,15");
        out.push_back(saturating_product(e, steps_per_epoch));
    }
    return out;
}

} // namespace

LrScheduleConfig schedule_config(const TrainOptions &o, const ShardedSampler &s)
{
    LrScheduleConfig c;
    c.base_lr = o.lr;
    c.base_batch = o.base_batch;
    c.global_batch = s.global_batch();
    // Clamped: a double beyond uint64_t's range does not convert.
    c.warmup_steps = uint64_t(std::min(o.warmup_epochs * double(s.steps_per_epoch()), 0x1p63));
    c.total_steps = saturating_product(o.epochs, s.steps_per_epoch());
    c.decay = parse_decay(o.decay);
    c.milestones = parse_milestones(o.milestones, s.steps_per_epoch());
    c.gamma = o.gamma;
    return c;
}

Trainer::Trainer(const TrainOptions &options, const Dataset &train, const Dataset &test,
                 Compute &compute, Distributed &dist)
    : o_(options), train_(train), test_(test), c_(compute), dist_(dist),
      model_(build_model(compute, options.model,
                         InputShape{train.channels, train.height, train.width, train.classes},
                         options.seed)),
      optimizer_(compute, optimizer_config(options), model_.parameters()), loss_(compute),
      sampler_(train.size(), dist.rank(), dist.size(), options.batch_size, options.seed),
      schedule_(schedule_config(options, sampler_)), sync_(dist, compute),
      progress_(stdout, options.progress && dist.rank() == 0 && !options.quiet, options.epochs,
                sampler_.steps_per_epoch(), sampler_.global_batch()),
      table_(stdout), params_(model_.parameters())
{
}

double Trainer::seconds_since_start() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Trainer::load_batch(const Dataset &data, std::span<const uint32_t> indices)
{
    const int64_t n = int64_t(indices.size());
    batch_.images.resize(indices.size() * data.sample_size());
    batch_.labels.resize(indices.size());
    data.gather(indices, batch_.images.data(), batch_.labels.data());
    ensure(batch_.y, c_, dt_tensor_desc_1d(DT_INT32, n));
    load_input(c_, model_, batch_.x, batch_.images.data(), n);
    batch_.y.copy_from_host(c_, batch_.labels.data());
}

void Trainer::run()
{
    start_ = std::chrono::steady_clock::now();
    // A replacement joining an elastic job gets the state from the job's sync instead.
    if (!joining_elastic_job()) {
        check_same_settings();
        restore_or_broadcast();
        // Resumed from a run that has done its --epochs (rank 0 said so): the request is
        // met, as when the same command is run again after it ended, so exit status 0.
        if (pos_.epoch >= o_.epochs)
            return;
    }
    if (dist_.rank() == 0 && !o_.metrics_file.empty())
        metrics_ = MetricsLog(o_.metrics_file, o_.resume, pos_.epoch);
    if (dist_.rank() == 0)
        std::fprintf(stderr,
                     "disttrain-train: %s (%zu parameters), %d rank(s) over %s, %s, %s "
                     "activations, %s layout; global batch %zu, %zu steps per epoch, "
                     "peak lr %g\n",
                     o_.model.c_str(), model_.parameter_count(), dist_.size(),
                     dist_.transport().c_str(), c_.describe().c_str(),
                     dt_dtype_name(model_.activations), layout_name(model_.layout),
                     sampler_.global_batch(), sampler_.steps_per_epoch(), schedule_.peak());
    if (o_.elastic)
        run_elastic();
    else
        while (pos_.epoch < o_.epochs)
            train_epoch();
    if (o_.print_checksum)
        std::printf("rank %d model checksum %016llx\n", dist_.rank(),
                    static_cast<unsigned long long>(model_checksum(c_, model_)));
}

void Trainer::fold_metrics()
{
    std::vector<double> sums = {loss_sum_, correct_, seen_};
    dist_.sum(sums, "train/metrics");
    pos_.loss_sum += sums[0];
    pos_.correct += sums[1];
    pos_.seen += sums[2];
    loss_sum_ = correct_ = seen_ = 0;
}

void Trainer::report(const EpochReport &rep)
{
    if (dist_.rank() != 0)
        return;
    progress_.clear();
    if (!o_.quiet)
        table_.print(rep);
    metrics_.write(rep);
}

void Trainer::train_epoch()
{
    sampler_.set_epoch(pos_.epoch);
    const size_t steps = sampler_.steps_per_epoch();
    // The ranks' mean losses averaged give the global batch's mean loss when each is
    // taken over global batch / ranks images, whatever this rank's share of it.
    const double mean_over = double(sampler_.global_batch()) / double(dist_.size());
    auto epoch_start = std::chrono::steady_clock::now();
    const double epoch_time_before = pos_.epoch_time;
    auto epoch_time = [&] {
        return epoch_time_before +
               std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start)
                   .count();
    };
    loss_sum_ = correct_ = seen_ = 0; // pos_ holds the sums up to here
    for (; pos_.step < steps; ++pos_.step) {
        fault_point(FaultPoint::step);
        load_batch(train_, sampler_.batch(pos_.step));
        const LossResult r = train_step(model_, loss_, sync_, optimizer_, batch_.x, batch_.y,
                                        schedule_.at(pos_.global_step), mean_over);
        const double b = double(batch_.labels.size());
        loss_sum_ += r.loss * b;
        correct_ += double(r.correct);
        seen_ += b;
        ++pos_.global_step;
        progress_.update(pos_.epoch + 1, pos_.step + 1);
        if (elastic_)
            after_step();
        const bool checkpoint = o_.checkpoint_every > 0 &&
                                pos_.global_step % o_.checkpoint_every == 0 &&
                                !o_.checkpoint_dir.empty();
        const bool elastic_commit = elastic_ && pos_.global_step % o_.commit_every == 0;
        if ((checkpoint || elastic_commit) && pos_.step + 1 < steps) {
            const auto commit_start = std::chrono::steady_clock::now();
            // Fold this rank's sums into the global ones the checkpoint or commit records.
            fold_metrics();
            pos_.epoch_time = epoch_time();
            ++pos_.step; // they resume after this step
            if (checkpoint)
                save(false);
            if (elastic_commit)
                commit();
            --pos_.step;
            if (elastic_commit && !checkpoint) {
                commit_seconds_ += std::chrono::duration<double>(
                                       std::chrono::steady_clock::now() - commit_start)
                                       .count();
                ++commits_;
            }
        }
    }
    const double train_time = epoch_time();
    fold_metrics();

    dist_.average(buffer_tensors(model_), "bn/");
    const auto [val_loss, val_acc] = evaluate();
    EpochReport rep;
    rep.epoch = pos_.epoch + 1;
    rep.iteration = pos_.global_step;
    rep.loss = pos_.loss_sum / pos_.seen;
    rep.accuracy = pos_.correct / pos_.seen;
    rep.val_loss = val_loss;
    rep.val_accuracy = val_acc;
    rep.elapsed_time = pos_.elapsed + seconds_since_start();
    rep.images_per_sec = pos_.seen / std::max(train_time, 1e-9);
    rep.lr = schedule_.at(pos_.global_step - 1);
    // Both losses were summed across ranks, so every rank takes the same branch. The
    // validation loss also sees the epoch's last update, which no training loss saw. The
    // epoch's line is printed first: it shows what went wrong.
    if (!std::isfinite(rep.loss) || !std::isfinite(rep.val_loss)) {
        report(rep);
        diverged(rep.epoch, cat("the mean training loss is ", rep.loss,
                                " and the validation loss ", rep.val_loss));
    }

    pos_ = Position{pos_.epoch + 1, 0, pos_.global_step, 0, 0, 0, pos_.elapsed, 0};
    if (elastic_) {
        // Committed before the report, so a loss here repeats the epoch's end rather than
        // printing its line twice; joiners let in after it is printed.
        try {
            commit();
        } catch (const disttrain::elastic::joiners_waiting &) {
            report(rep);
            throw;
        }
    }
    // The report before the checkpoint: a crash between the two repeats the epoch, whose
    // line the resumed run then drops and writes again (MetricsLog keeps lines up to the
    // checkpoint's epoch), rather than losing it.
    report(rep);
    if (!o_.checkpoint_dir.empty())
        save(true);
}

std::pair<double, double> Trainer::evaluate()
{
    const Range shard = shard_range(test_.size(), dist_.rank(), dist_.size());
    std::vector<uint32_t> indices;
    double loss_sum = 0, correct = 0;
    for (size_t b = shard.begin; b < shard.end; b += o_.batch_size) {
        const size_t e = std::min(shard.end, b + o_.batch_size);
        indices.resize(e - b);
        for (size_t i = b; i < e; ++i)
            indices[i - b] = uint32_t(i);
        load_batch(test_, indices);
        const LossResult r = loss_.forward(model_.net->forward(batch_.x, false), batch_.y);
        loss_sum += r.loss * double(e - b);
        correct += double(r.correct);
    }
    std::vector<double> sums = {loss_sum, correct, double(shard.end - shard.begin)};
    dist_.sum(sums, "validation/metrics");
    return {sums[0] / std::max(sums[2], 1.0), sums[1] / std::max(sums[2], 1.0)};
}

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
// Trainer: elastic training (--elastic, under disttrainrun --elastic). The model, the
// optimizer state and the position (epoch, step, metric sums: the sampler's place) are
// committed in memory every --commit-every steps and at each epoch's end. When a
// collective fails because a rank died, every survivor goes back to its last commit, the
// job re-forms without the dead rank, the new rank 0's state is broadcast, each rank takes
// its new share of the same global batch, and training goes on. A replacement started by
// disttrainrun --max-restarts is let in at a commit and gets the state by the same
// broadcast.
#include "common/error.h"
#include "train/model_state.h"
#include "train/trainer.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace dt::models {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

double unix_time()
{
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

// disttrainrun terminates the survivors with SIGTERM when fewer than --min-np ranks are left
// (or a rank failed for good, or the job was interrupted): each then says so, rather than
// vanishing without a word. Two buffers and an index, so the handler never reads a line being rewritten.
char sigterm_lines[2][200];
volatile sig_atomic_t sigterm_line = 0;

extern "C" void on_sigterm(int sig)
{
    const char *line = sigterm_lines[sigterm_line];
    ssize_t ignored = write(STDERR_FILENO, line, std::strlen(line));
    (void)ignored;
    _exit(128 + sig);
}

void set_sigterm_line(int rank, int size)
{
    const int next = 1 - sigterm_line;
    std::snprintf(sigterm_lines[next], sizeof sigterm_lines[next],
                  "disttrain-train: elastic: rank %d of %d ended by SIGTERM: disttrainrun "
                  "ends the job when fewer than --min-np ranks are left, a rank failed for "
                  "good or the job was interrupted\n",
                  rank, size);
    sigterm_line = next;
}

} // namespace

bool joining_elastic_job()
{
    const char *join = std::getenv("DISTTRAIN_ELASTIC_JOIN");
    return join != nullptr && *join != '\0';
}

void Trainer::run_elastic()
{
    elastic_ = std::make_unique<disttrain::elastic::state>(dist_.context());
    // Host tensors (checked in main), so the state holds their memory itself.
    for (const Tensor &t : model_tensors(model_))
        elastic_->add(t.data(), t.bytes());
    for (const Tensor &t : optimizer_.state())
        elastic_->add(t.data(), t.bytes());
    position_ = pack_position(pos_);
    elastic_->add(position_.data(), sizeof position_);
    // The job's global batch is rank 0's: a replacement computed its own from the size
    // it was started with, which need not be the job's first.
    global_batch_ = sampler_.global_batch();
    elastic_->add(&global_batch_, sizeof global_batch_);

    elastic_->on_peer_lost([this](const disttrain::error &) {
        sync_.abandon(); // dt_context_reform needs every request of the old job freed
        if (!reform_.pending) // a second loss before the first step keeps the first time
            reform_ = Reform{true, false, dist_.size(), Clock::now(), {}};
    });
    elastic_->on_reset([this] { reform_.reformed = Clock::now(); });

    set_sigterm_line(dist_.rank(), dist_.size());
    std::signal(SIGTERM, on_sigterm);
    if (dist_.rank() == 0)
        std::fprintf(stderr,
                     "disttrain-train: elastic: %.1f MB of state committed in memory every "
                     "%llu step(s) and at each epoch's end\n",
                     double(elastic_->bytes()) / 1e6,
                     static_cast<unsigned long long>(o_.commit_every));

    disttrain::elastic::run(*elastic_, [this] {
        enter_elastic();
        while (pos_.epoch < o_.epochs)
            train_epoch();
    });
    // What --commit-every costs: mid-epoch commits against the whole run (this process).
    if (dist_.rank() == 0 && commits_ > 0)
        std::fprintf(stderr,
                     "disttrain-train: elastic: %llu mid-epoch commits took %.2f ms each, "
                     "%.1f%% of this rank's %.1f s\n",
                     static_cast<unsigned long long>(commits_), 1e3 * commit_seconds_ /
                     double(commits_), 100.0 * commit_seconds_ / seconds_since_start(),
                     seconds_since_start());
}

void Trainer::enter_elastic()
{
    dist_.refresh();
    set_sigterm_line(dist_.rank(), dist_.size());
    pos_ = unpack_position(position_);
    optimizer_.set_steps(int64_t(pos_.global_step));
    if (global_batch_ != sampler_.global_batch()) {
        sampler_.set_global_batch(global_batch_);
        schedule_ = LrSchedule(schedule_config(o_, sampler_));
    }
    sampler_.reshard(dist_.rank(), dist_.size());
    // A rank that became rank 0 takes over the metrics file, keeping the epochs committed.
    if (dist_.rank() == 0 && !o_.metrics_file.empty() && !metrics_.enabled())
        metrics_ = MetricsLog(o_.metrics_file, true, pos_.epoch);
}

void Trainer::commit()
{
    position_ = pack_position(pos_);
    try {
        elastic_->commit();
    } catch (const disttrain::elastic::joiners_waiting &) {
        if (!reform_.pending)
            reform_ = Reform{true, true, dist_.size(), Clock::now(), {}};
        throw;
    }
}

void Trainer::after_step()
{
    if (!reform_.pending || reform_.reformed == Clock::time_point{})
        return;
    const auto now = Clock::now();
    if (dist_.rank() == 0)
        std::fprintf(stderr,
                     "elastic: re-formed epoch %llu: size %d -> %d in %.1f ms, first step "
                     "after %.1f ms (%s; step %llu, unix time %.3f)\n",
                     static_cast<unsigned long long>(pos_.epoch + 1), reform_.size_before,
                     dist_.size(), ms_between(reform_.seen, reform_.reformed),
                     ms_between(reform_.seen, now),
                     reform_.grew ? "replacements joined" : "a rank was lost",
                     static_cast<unsigned long long>(pos_.step + 1), unix_time());
    reform_ = Reform{};
}

} // namespace dt::models

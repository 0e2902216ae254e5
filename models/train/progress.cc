// SPDX-License-Identifier: Apache-2.0
#include "train/progress.h"

#include <cstdlib>
#include <unistd.h>

namespace dt::models {
namespace {
constexpr int kWidth = 30;
}

ProgressBar::ProgressBar(FILE *out, bool enabled, uint64_t epochs,
                         uint64_t steps_per_epoch, uint64_t images_per_step)
    : out_(out), on_(false), epochs_(epochs), steps_(steps_per_epoch),
      images_per_step_(images_per_step)
{
    if (!enabled)
        return;
    if (::isatty(::fileno(out)) != 0) {
        on_ = true;
    } else if (std::getenv("DISTTRAIN_RANK") != nullptr &&
               (tty_ = std::fopen("/dev/tty", "we")) != nullptr) {
        out_ = tty_;
        on_ = true;
    }
}

ProgressBar::~ProgressBar()
{
    clear();
    if (tty_ != nullptr)
        std::fclose(tty_);
}

void ProgressBar::update(uint64_t epoch, uint64_t step)
{
    if (!on_)
        return;
    const auto now = Clock::now();
    const uint64_t global = (epoch - 1) * steps_ + step;
    if (!started_) {
        started_ = true;
        start_ = now;
        start_step_ = global - 1;
    }
    // After clear() too: the table row on its way through the launcher lands first.
    if (step != steps_ && now - last_draw_ < std::chrono::milliseconds(drawn_ ? 100 : 300))
        return;
    last_draw_ = now;
    drawn_ = true;

    const double secs = std::chrono::duration<double>(now - start_).count();
    const double done_steps = double(global - start_step_);
    const double rate = secs > 0 ? done_steps / secs : 0.0;
    const double left = rate > 0 ? double(epochs_ * steps_ - global) / rate : 0.0;
    const int fill = int(kWidth * double(step) / double(steps_));
    char bar[kWidth + 1];
    for (int i = 0; i < kWidth; ++i)
        bar[i] = i < fill ? '#' : '.';
    bar[kWidth] = '\0';
    const auto eta = static_cast<long long>(left);
    std::fprintf(out_, "\r\033[Kepoch %llu/%llu [%s] %5.1f%% %llu iter %.0f images/sec "
                 "ETA %lld:%02lld:%02lld",
                 static_cast<unsigned long long>(epoch),
                 static_cast<unsigned long long>(epochs_), bar,
                 100.0 * double(step) / double(steps_),
                 static_cast<unsigned long long>(global), rate * double(images_per_step_),
                 eta / 3600, eta / 60 % 60, eta % 60);
    std::fflush(out_);
}

void ProgressBar::clear()
{
    if (on_ && drawn_) {
        std::fprintf(out_, "\r\033[K");
        std::fflush(out_);
        drawn_ = false;
        last_draw_ = Clock::now();
    }
}

} // namespace dt::models

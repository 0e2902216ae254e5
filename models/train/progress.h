/* SPDX-License-Identifier: Apache-2.0 */
// A one-line progress bar on a terminal, redrawn in place with '\r' (ChainerMN's
// ProgressBar, condensed): epoch, bar, iterations, images/sec and time left. It draws
// only on a terminal, so logs and pipes get the table alone, and at most every 100 ms so
// it never slows training. Under disttrainrun stdout is a pipe to the launcher, which
// forwards whole lines; the bar then goes straight to the controlling terminal
// (/dev/tty) when the job has one.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace dt::models {

class ProgressBar {
public:
    // enabled: the caller's choice (rank 0 and not --no-progress); the bar draws only if
    // `out` is a terminal, or under the launcher if /dev/tty opens.
    ProgressBar(FILE *out, bool enabled, uint64_t epochs, uint64_t steps_per_epoch,
                uint64_t images_per_step);
    ~ProgressBar();
    ProgressBar(const ProgressBar &) = delete;
    ProgressBar &operator=(const ProgressBar &) = delete;

    // After step `step` (1-based within the epoch) of epoch `epoch` (1-based).
    void update(uint64_t epoch, uint64_t step);
    // Erases the bar so the next line (a table row) starts clean.
    void clear();

private:
    using Clock = std::chrono::steady_clock;
    FILE *out_;
    FILE *tty_ = nullptr; // /dev/tty, opened (and closed) by the bar
    bool on_;
    uint64_t epochs_, steps_, images_per_step_;
    Clock::time_point start_, last_draw_;
    uint64_t start_step_ = 0; // global step at the first update (after a resume)
    bool started_ = false;
    bool drawn_ = false;
};

} // namespace dt::models

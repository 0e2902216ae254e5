/* SPDX-License-Identifier: Apache-2.0 */
// What the trainer reports per epoch, as ChainerMN's LogReport / PrintReport do: a table
// on rank 0's stdout and one JSON object per line in a metrics file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace dt::models {

struct EpochReport {
    uint64_t epoch = 0;        // 1-based
    uint64_t iteration = 0;    // optimizer steps so far
    double loss = 0;           // main/loss: mean training loss over the epoch
    double accuracy = 0;       // main/accuracy
    double val_loss = 0;       // validation/main/loss
    double val_accuracy = 0;   // validation/main/accuracy
    double elapsed_time = 0;   // seconds since training started (this process)
    double images_per_sec = 0; // training images of all ranks per second, this epoch
    double lr = 0;             // learning rate of the epoch's last step
};

// The PrintReport table: a header once, then one row per epoch.
class ReportTable {
public:
    explicit ReportTable(FILE *out) : out_(out) {}
    void print(const EpochReport &r);

private:
    FILE *out_;
    bool header_done_ = false;
};

// One JSON object per epoch, one per line. With `resume`, lines of epochs after
// keep_epochs (written by the run that was interrupted after its last checkpoint) are
// dropped first, so a resumed run's file reads like an uninterrupted run's.
class MetricsLog {
public:
    MetricsLog() = default;
    MetricsLog(const std::string &path, bool resume, uint64_t keep_epochs);
    void write(const EpochReport &r);
    bool enabled() const { return out_.is_open(); }

private:
    std::string path_;
    std::ofstream out_;
};

std::string to_json(const EpochReport &r);

} // namespace dt::models

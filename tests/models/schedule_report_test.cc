// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedule and the per-epoch reports.
#include "train/lr_schedule.h"
#include "train/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dt::models {
namespace {

TEST(LrSchedule, LinearScalingAndWarmup)
{
    LrScheduleConfig c;
    c.base_lr = 0.1;
    c.base_batch = 256;
    c.global_batch = 1024;
    c.warmup_steps = 4;
    c.total_steps = 100;
    LrSchedule s(c);
    EXPECT_DOUBLE_EQ(s.peak(), 0.4);
    EXPECT_DOUBLE_EQ(s.at(0), 0.1 + 0.3 * 0.25);
    EXPECT_DOUBLE_EQ(s.at(3), 0.4);
    EXPECT_DOUBLE_EQ(s.at(50), 0.4);
}

TEST(LrSchedule, NoBaseBatchMeansNoScaling)
{
    LrScheduleConfig c;
    c.base_lr = 0.05;
    c.global_batch = 200;
    EXPECT_DOUBLE_EQ(LrSchedule(c).at(7), 0.05);
}

TEST(LrSchedule, StepAndCosineDecay)
{
    LrScheduleConfig c;
    c.base_lr = 1.0;
    c.total_steps = 100;
    c.decay = Decay::step;
    c.milestones = {50, 75};
    LrSchedule s(c);
    EXPECT_DOUBLE_EQ(s.at(49), 1.0);
    EXPECT_NEAR(s.at(50), 0.1, 1e-12);
    EXPECT_NEAR(s.at(99), 0.01, 1e-12);
    c.decay = Decay::cosine;
    LrSchedule cos(c);
    EXPECT_DOUBLE_EQ(cos.at(0), 1.0);
    EXPECT_NEAR(cos.at(50), 0.5, 1e-12);
    EXPECT_NEAR(cos.at(100), 0.0, 1e-12);
}

TEST(Report, JsonLineHasChainerKeys)
{
    EpochReport r;
    r.epoch = 3;
    r.loss = 0.5;
    r.val_accuracy = 0.875;
    const std::string j = to_json(r);
    EXPECT_NE(j.find("\"epoch\": 3"), std::string::npos) << j;
    EXPECT_NE(j.find("\"main/loss\": 0.5"), std::string::npos) << j;
    EXPECT_NE(j.find("\"validation/main/accuracy\": 0.875"), std::string::npos) << j;
    EXPECT_EQ(j.find('\n'), std::string::npos);
}

TEST(Report, ResumeDropsEpochsAfterTheCheckpoint)
{
    const auto path = std::filesystem::temp_directory_path() /
                      ("dt-metrics-" + std::to_string(::getpid()) + ".jsonl");
    {
        MetricsLog log(path.string(), false, 0);
        for (uint64_t e = 1; e <= 3; ++e) {
            EpochReport r;
            r.epoch = e;
            log.write(r);
        }
    }
    {
        MetricsLog log(path.string(), true, 2); // checkpoint after epoch 2
        EpochReport r;
        r.epoch = 3;
        r.loss = 7;
        log.write(r);
    }
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    std::filesystem::remove(path);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_NE(lines[2].find("\"main/loss\": 7"), std::string::npos);
}

} // namespace
} // namespace dt::models

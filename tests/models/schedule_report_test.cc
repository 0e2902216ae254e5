// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedule and the per-epoch reports.
#include "train/lr_schedule.h"
#include "train/report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

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

// The rows ReportTable prints for these reports: the header, then one line each.
std::vector<std::string> table_lines(const std::vector<EpochReport> &reports)
{
    char *buf = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    {
        ReportTable t(f);
        for (const auto &r : reports)
            t.print(r);
    }
    std::fclose(f);
    std::istringstream in(std::string(buf, size));
    std::free(buf);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    return lines;
}

std::vector<std::string> words(const std::string &line)
{
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

TEST(Report, TableCellsStayApartAndAligned)
{
    EpochReport usual;
    usual.epoch = 1;
    usual.loss = 0.512345;
    usual.val_loss = 0.498765;
    usual.accuracy = 0.8125;
    usual.val_accuracy = 0.8;
    usual.elapsed_time = 1.23456;
    usual.images_per_sec = 5432.1;
    // Values as wide as their columns in %.6g (11 characters for the 11 of
    // "main/loss  "); then an epoch as wide as its column and values wider than theirs.
    EpochReport wide = usual;
    wide.epoch = 50;
    wide.loss = 0.000945148;
    wide.val_loss = 4.66644e+18;
    wide.images_per_sec = -1.23457e+11; // 12 characters, for the 12 of "images/sec  "
    EpochReport huge = usual;
    huge.epoch = 1234567;
    huge.loss = -1.234567e-300;
    huge.val_loss = -1.5e308;
    huge.accuracy = -1.5e308;
    huge.val_accuracy = -1.5e308;
    huge.elapsed_time = -1.5e308;
    huge.images_per_sec = -1.5e308;
    const auto lines = table_lines({usual, wide, huge});
    ASSERT_EQ(lines.size(), 4u);
    const std::vector<std::string> titles = words(lines[0]);
    ASSERT_EQ(titles.size(), 7u);
    for (size_t i = 1; i < lines.size(); ++i) {
        // Seven cells, each a number: none ran into its neighbour.
        const auto cells = words(lines[i]);
        ASSERT_EQ(cells.size(), 7u) << lines[i];
        for (const auto &c : cells) {
            char *end = nullptr;
            std::strtod(c.c_str(), &end);
            EXPECT_EQ(*end, '\0') << c << " in " << lines[i];
        }
    }
    EXPECT_EQ(words(lines[2])[1], "0.00094515"); // lost a digit to keep a space
    EXPECT_EQ(words(lines[2])[6], "-1.2346e+11");
    EXPECT_EQ(words(lines[3])[1], "-1.23457e-300"); // no room even for 3 digits
    // Where the values fit, every cell starts under its title.
    for (size_t row : {size_t(1), size_t(2)}) {
        size_t at = 0;
        for (const auto &t : titles) {
            at = lines[0].find(t, at);
            ASSERT_LT(at, lines[row].size()) << lines[row];
            EXPECT_NE(lines[row][at], ' ') << t << " in " << lines[row];
            if (at > 0) {
                EXPECT_EQ(lines[row][at - 1], ' ') << t << " in " << lines[row];
            }
        }
    }
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

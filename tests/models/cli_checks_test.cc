// SPDX-License-Identifier: Apache-2.0
// The command-line value checks shared by disttrain-train and disttrain-bench.
#include "train/cli_checks.h"
#include "train/options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dt::models {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

TEST(CliChecks, WholeNumbers)
{
    std::string c;
    EXPECT_EQ(check_whole_number("7", 1, kU64Max, &c), "");
    EXPECT_EQ(c, "7");
    EXPECT_EQ(check_whole_number("010", 0, kU64Max, &c), ""); // decimal, not octal 8
    EXPECT_EQ(c, "10");
    EXPECT_EQ(check_whole_number("+5", 0, kU64Max, &c), "");
    EXPECT_EQ(c, "5");
    EXPECT_EQ(check_whole_number("-0", 0, kU64Max, &c), "");
    EXPECT_EQ(c, "0");
    EXPECT_EQ(check_whole_number("18446744073709551615", 0, kU64Max), "");
    EXPECT_EQ(check_whole_number("0", 1, kU64Max), "must be at least 1, got 0");
    EXPECT_EQ(check_whole_number("-1", 0, kU64Max), "must be at least 0, got -1");
    EXPECT_EQ(check_whole_number("18446744073709551616", 0, kU64Max),
              "must be at most 18446744073709551615, got 18446744073709551616");
    EXPECT_EQ(check_whole_number("2147483648", 0, 2147483647),
              "must be at most 2147483647, got 2147483648");
    EXPECT_EQ(check_whole_number("9", 1, 8), "must be from 1 to 8, got 9");
    for (const char *bad : {"", "two", "1.5", "0x10", "1e3", " 1", "1 ", "-", "+"})
        EXPECT_EQ(check_whole_number(bad, 1, kU64Max),
                  std::string("must be a whole number at least 1, got '") + bad + "'")
            << bad;
}

TEST(CliChecks, RealNumbers)
{
    const RealRange non_negative{0, false};
    const RealRange unit{0, false, 1, true};
    EXPECT_EQ(describe(non_negative), "at least 0");
    EXPECT_EQ(describe(RealRange{0, true}), "greater than 0");
    EXPECT_EQ(describe(unit), "at least 0 and below 1");
    EXPECT_EQ(check_real_number("0.05", non_negative), "");
    EXPECT_EQ(check_real_number("0", non_negative), "");
    EXPECT_EQ(check_real_number("1e-3", non_negative), "");
    EXPECT_EQ(check_real_number("-1", non_negative), "must be at least 0, got -1");
    EXPECT_EQ(check_real_number("0", RealRange{0, true}), "must be greater than 0, got 0");
    EXPECT_EQ(check_real_number("0.99", unit), "");
    EXPECT_EQ(check_real_number("1", unit), "must be at least 0 and below 1, got 1");
    for (const char *bad : {"nan", "inf", "-inf", "1e999"})
        EXPECT_EQ(check_real_number(bad, non_negative),
                  std::string("must be a finite number at least 0, got ") + bad)
            << bad;
    for (const char *bad : {"", "fast", "0.1x", " 1"})
        EXPECT_EQ(check_real_number(bad, non_negative),
                  std::string("must be a number at least 0, got '") + bad + "'")
            << bad;
}

TEST(SharedSettings, RoundTripAndTheOnesThatDiffer)
{
    TrainOptions a;
    const SharedSettings mine = shared_settings(a, 400, 200);
    EXPECT_EQ(decode_settings(encode_settings(mine)), mine);
    EXPECT_TRUE(differing_settings(mine, mine).empty());
    // Reals in their shortest form, so a message says 0.05 rather than its 17 digits.
    bool found = false;
    for (const auto &[name, value] : mine)
        if (name == "--lr") {
            found = true;
            EXPECT_EQ(value, "0.05");
        }
    EXPECT_TRUE(found);
    TrainOptions b = a;
    b.lr = 0.5;
    b.optimizer = "adam";
    const SharedSettings theirs = shared_settings(b, 400, 300);
    std::vector<std::string> names;
    for (size_t i : differing_settings(mine, theirs))
        names.push_back(theirs[i].first);
    EXPECT_EQ(names, (std::vector<std::string>{"--lr", "--optimizer",
                                               "test images (--test-limit, --data-dir)"}));
    // A setting that one side does not have differs too (another build of the trainer).
    SharedSettings fewer = mine;
    fewer.pop_back();
    EXPECT_EQ(differing_settings(fewer, mine), std::vector<size_t>{mine.size() - 1});
}

} // namespace
} // namespace dt::models

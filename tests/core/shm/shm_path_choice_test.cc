// SPDX-License-Identifier: Apache-2.0
// PathChooser (core/shm/path_choice.h): the first member's choice between staging and
// single-copy reads (and staging through memory) from the times of earlier calls, on
// made-up times and clocks.
#include "shm/path_choice.h"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using dt::shm::PathChooser;

namespace {

constexpr size_t kBytes = 1 << 20;

struct Host {
    PathChooser chooser;
    PathChooser::Clock::time_point now{};
    // One call of kBytes at `now`: takes what the host charges for the path chosen.
    PathChooser::Path call(std::chrono::microseconds staging, std::chrono::microseconds direct,
                           size_t bytes = kBytes)
    {
        const PathChooser::Path p = chooser.choose(bytes, now);
        const auto took = p == PathChooser::kStaging ? staging : direct;
        now += took;
        chooser.record(bytes, p, took, now);
        now += 10us; // the program between calls
        return p;
    }
    // Calls until the clock reaches `end`; how many read directly.
    int direct_calls_until(PathChooser::Clock::time_point end,
                           std::chrono::microseconds staging, std::chrono::microseconds direct)
    {
        int n = 0;
        while (now < end)
            n += call(staging, direct) == PathChooser::kSingleCopy;
        return n;
    }
};

} // namespace

// A new size class tries each path twice in turn (a first call also pays for touching
// fresh buffers), then runs the faster.
void try_both(Host &h, std::chrono::microseconds staging, std::chrono::microseconds direct,
              size_t bytes = kBytes)
{
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(h.call(staging, direct, bytes), PathChooser::kStaging) << "try " << i;
        EXPECT_EQ(h.call(staging, direct, bytes), PathChooser::kSingleCopy) << "try " << i;
    }
}

TEST(PathChooser, TriesBothPathsThenRunsTheFaster)
{
    Host h;
    try_both(h, 100us, 400us);
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(h.call(100us, 400us), PathChooser::kStaging) << "call " << i;

    Host g;
    try_both(g, 400us, 100us);
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(g.call(400us, 100us), PathChooser::kSingleCopy) << "call " << i;
}

TEST(PathChooser, AFirstSlowCallOnFreshBuffersDoesNotDecide)
{
    Host h;
    EXPECT_EQ(h.call(900us, 400us), PathChooser::kStaging); // first touch of the buffers
    EXPECT_EQ(h.call(100us, 400us), PathChooser::kSingleCopy);
    EXPECT_EQ(h.call(100us, 400us), PathChooser::kStaging);
    EXPECT_EQ(h.call(100us, 400us), PathChooser::kSingleCopy);
    EXPECT_EQ(h.call(100us, 400us), PathChooser::kStaging);
}

TEST(PathChooser, EachSizeClassChoosesForItself)
{
    Host h;
    try_both(h, 100us, 400us, 64 << 10);
    // 4 MiB has not run yet: it tries both, whatever 64 KiB found.
    try_both(h, 100us, 400us, 4 << 20);
    // Sizes within one power of two share their times.
    EXPECT_EQ(h.call(100us, 400us, (64 << 10) + 4096), PathChooser::kStaging);
}

TEST(PathChooser, OneSlowCallDoesNotFlipTheChoice)
{
    Host h;
    try_both(h, 100us, 200us);
    EXPECT_EQ(h.call(5000us, 200us), PathChooser::kStaging); // preempted once
    EXPECT_EQ(h.call(100us, 200us), PathChooser::kStaging);
}

TEST(PathChooser, TheSlowerPathIsTriedAgainAfterItsRetryPeriod)
{
    Host h;
    try_both(h, 100us, 400us);
    // Within the period (100 ms; 50 x 400 us = 20 ms is less), staging only.
    const auto tried = h.now;
    EXPECT_EQ(h.direct_calls_until(tried + 99ms, 100us, 400us), 0);
    // Then one try, and staging again (single copy is still slower).
    EXPECT_EQ(h.direct_calls_until(tried + 101ms, 100us, 400us), 1);
    EXPECT_EQ(h.call(100us, 400us), PathChooser::kStaging);
}

TEST(PathChooser, ASlowPathIsRetriedAtMostEveryFiftyOfItsDurations)
{
    // Single copy takes 10 ms: 50 of them are 500 ms, longer than the 100 ms floor.
    Host h;
    try_both(h, 1000us, 10000us);
    const int direct = h.direct_calls_until(h.now + 2s, 1000us, 10000us);
    EXPECT_GE(direct, 3);
    EXPECT_LE(direct, 4); // 2 s / (500 ms + the try): overhead under 2%
}

TEST(PathChooser, FollowsTheHostWhenTheFasterPathChanges)
{
    Host h;
    try_both(h, 100us, 300us);
    // The host changes: staging now takes 300 us, single copy 100 us. Staging's own
    // times show it within 3 calls; single copy is tried again within its period and
    // then kept.
    const auto change = h.now;
    PathChooser::Path p = PathChooser::kStaging;
    while (h.now - change < 200ms)
        p = h.call(300us, 100us);
    EXPECT_EQ(p, PathChooser::kSingleCopy);
    // And back: single copy's own times turn slower, staging's old ones win at once.
    for (int i = 0; i < 4; ++i)
        p = h.call(100us, 300us);
    EXPECT_EQ(p, PathChooser::kStaging);
}

// Where staging through memory is offered too (3 paths), each is tried twice in turn,
// then the fastest runs, and the others are tried again after their retry periods.
TEST(PathChooser, ThreePathsRunTheFastest)
{
    PathChooser chooser;
    PathChooser::Clock::time_point now{};
    const std::chrono::microseconds took[] = {300us, 400us, 100us};
    auto call = [&] {
        const PathChooser::Path p = chooser.choose(kBytes, now, 3);
        now += took[p];
        chooser.record(kBytes, p, took[p], now);
        now += 10us;
        return p;
    };
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(call(), PathChooser::kStaging) << "try " << i;
        EXPECT_EQ(call(), PathChooser::kSingleCopy) << "try " << i;
        EXPECT_EQ(call(), PathChooser::kStagingThroughMemory) << "try " << i;
    }
    int others = 0;
    const auto start = now;
    while (now - start < 250ms)
        others += call() != PathChooser::kStagingThroughMemory;
    EXPECT_GE(others, 2); // each slower path once per 100 ms at least
    EXPECT_LE(others, 6);
}

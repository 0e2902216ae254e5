// SPDX-License-Identifier: Apache-2.0
// Sharding: the ranks' batches of a step are the 1-rank batch split in order, and the
// shuffle depends only on (seed, epoch).
#include "data/sampler.h"

#include "common/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace dt::models {
namespace {

TEST(Sampler, TwoRanksSplitTheOneRankBatch)
{
    ShardedSampler one(1000, 0, 1, 64, 7), r0(1000, 0, 2, 32, 7), r1(1000, 1, 2, 32, 7);
    ASSERT_EQ(one.steps_per_epoch(), r0.steps_per_epoch());
    for (uint64_t epoch : {0, 3}) {
        one.set_epoch(epoch);
        r0.set_epoch(epoch);
        r1.set_epoch(epoch);
        for (size_t s = 0; s < one.steps_per_epoch(); ++s) {
            std::vector<uint32_t> joined(r0.batch(s).begin(), r0.batch(s).end());
            joined.insert(joined.end(), r1.batch(s).begin(), r1.batch(s).end());
            ASSERT_TRUE(std::equal(joined.begin(), joined.end(), one.batch(s).begin()));
        }
    }
}

TEST(Sampler, ReshardKeepsTheGlobalBatchAndSpreadsTheRemainder)
{
    // 4 ranks of 25 re-formed to 3: blocks of 34, 33, 33 that join into the same batch.
    ShardedSampler one(1000, 0, 1, 100, 7);
    std::vector<ShardedSampler> three;
    for (int r = 0; r < 3; ++r) {
        three.emplace_back(1000, r, 4, 25, 7);
        three.back().reshard(r, 3);
    }
    EXPECT_EQ(three[0].batch_size(), 34u);
    EXPECT_EQ(three[2].batch_size(), 33u);
    EXPECT_EQ(three[0].global_batch(), 100u);
    EXPECT_EQ(three[0].steps_per_epoch(), one.steps_per_epoch());
    one.set_epoch(2);
    for (auto &s : three)
        s.set_epoch(2);
    for (size_t k = 0; k < one.steps_per_epoch(); ++k) {
        std::vector<uint32_t> joined;
        for (auto &s : three)
            joined.insert(joined.end(), s.batch(k).begin(), s.batch(k).end());
        ASSERT_TRUE(std::equal(joined.begin(), joined.end(), one.batch(k).begin()));
    }
    EXPECT_THROW(three[0].reshard(0, 101), InputError);
}

TEST(Sampler, EpochIsAPermutationAndEpochsDiffer)
{
    ShardedSampler s(100, 0, 1, 10, 1);
    s.set_epoch(0);
    std::vector<uint32_t> e0, e1;
    for (size_t k = 0; k < s.steps_per_epoch(); ++k)
        e0.insert(e0.end(), s.batch(k).begin(), s.batch(k).end());
    s.set_epoch(1);
    for (size_t k = 0; k < s.steps_per_epoch(); ++k)
        e1.insert(e1.end(), s.batch(k).begin(), s.batch(k).end());
    EXPECT_EQ(std::set<uint32_t>(e0.begin(), e0.end()).size(), 100u);
    EXPECT_NE(e0, e1);
    s.set_epoch(0); // the same (seed, epoch) gives the same order again
    EXPECT_TRUE(std::equal(e0.begin(), e0.begin() + 10, s.batch(0).begin()));
}

TEST(Sampler, DropsTheIncompleteTail)
{
    ShardedSampler s(105, 1, 2, 10, 1);
    EXPECT_EQ(s.steps_per_epoch(), 5u);
}

TEST(Sampler, RefusesBatchZeroAndTooFewSamples)
{
    EXPECT_THROW(ShardedSampler(100, 0, 1, 0, 1), InputError);
    EXPECT_THROW(ShardedSampler(10, 0, 2, 8, 1), InputError);
}

TEST(Sampler, RefusesABatchWhoseGlobalBatchWrapsAround)
{
    // 2^63 x 2 ranks wraps to 0 (it divided by zero), 2^63 + 50 to 100 (it trained with
    // 50 images a rank where the flag said 2^63 + 50).
    const size_t half = size_t{1} << 63;
    EXPECT_THROW(ShardedSampler(400, 0, 2, half, 1), InputError);
    EXPECT_THROW(ShardedSampler(400, 1, 2, half + 50, 1), InputError);
    EXPECT_THROW(ShardedSampler(400, 0, 3, ~size_t{0} / 3 + 2, 1), InputError);
    try {
        ShardedSampler(400, 0, 2, half + 50, 1);
    } catch (const InputError &e) {
        EXPECT_NE(std::string(e.what()).find("fewer than one global batch"), std::string::npos)
            << e.what();
    }
}

TEST(Sampler, ShardRangesCoverEveryItemOnce)
{
    for (int ranks : {1, 2, 3, 7}) {
        size_t next = 0;
        for (int r = 0; r < ranks; ++r) {
            const Range g = shard_range(100, r, ranks);
            EXPECT_EQ(g.begin, next);
            EXPECT_LE(g.end - g.begin, 100u / ranks + 1);
            next = g.end;
        }
        EXPECT_EQ(next, 100u);
    }
}

} // namespace
} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
// The oneDNN plugin's LRU primitive cache: hits, misses and eviction order.
#include "onednn_cache.h"

#include <gtest/gtest.h>

namespace dtp::onednn {
namespace {

struct Counted : CacheEntry {
    explicit Counted(int v) : value(v) {}
    int value;
};

TEST(PrimitiveCache, EvictsTheLeastRecentlyUsed)
{
    PrimitiveCache cache(2);
    int made = 0;
    auto get = [&](const std::string &key, int v) -> int {
        return cache.get<Counted>(key, [&] {
                   ++made;
                   return std::make_unique<Counted>(v);
               }).value;
    };
    EXPECT_EQ(get("a", 1), 1);
    EXPECT_EQ(get("b", 2), 2);
    EXPECT_EQ(get("a", 9), 1); // hit: the old entry, a becomes most recent
    EXPECT_EQ(made, 2);
    EXPECT_EQ(get("c", 3), 3); // evicts b
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(get("a", 9), 1);
    EXPECT_EQ(get("b", 4), 4); // b was evicted: made again
    EXPECT_EQ(made, 4);
    EXPECT_EQ(cache.hits(), 2u);
    EXPECT_EQ(cache.misses(), 4u);
}

} // namespace
} // namespace dtp::onednn

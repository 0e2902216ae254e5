// SPDX-License-Identifier: Apache-2.0
// The response cache: slots are a pure function of the sequence of inserts and erases,
// so ranks fed the coordinator's responses in the same order hold the same slots and can
// agree on cached operations with one byte per slot under a MIN allreduce.
#include "runtime/response_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

namespace dt {
namespace {

Signature sig(uint64_t count)
{
    Signature s;
    s.kind = OpKind::allreduce;
    s.dtype = DT_FLOAT32;
    s.count = count;
    return s;
}

// Every slot's content, free slots as "-", for whole-cache comparisons.
std::vector<std::string> layout(const ResponseCache &c)
{
    std::vector<std::string> out;
    for (size_t i = 0; i < c.slot_count(); ++i)
        out.push_back(c.occupied(static_cast<int>(i))
                          ? c.at(static_cast<int>(i)).name + "/" +
                                std::to_string(c.at(static_cast<int>(i)).sig.count)
                          : "-");
    return out;
}

TEST(ResponseCache, InsertTakesTheLowestFreeSlot)
{
    ResponseCache c;
    EXPECT_EQ(c.slot_count(), 0u);
    EXPECT_EQ(c.find("a"), -1);
    EXPECT_EQ(c.insert("a", sig(1)), 0);
    EXPECT_EQ(c.insert("b", sig(2)), 1);
    EXPECT_EQ(c.insert("c", sig(3)), 2);
    EXPECT_EQ(c.find("b"), 1);
    EXPECT_EQ(c.at(1).name, "b");
    EXPECT_EQ(c.at(1).sig, sig(2));

    c.erase(1);
    EXPECT_FALSE(c.occupied(1));
    EXPECT_EQ(c.find("b"), -1);
    EXPECT_EQ(c.slot_count(), 3u) << "a free slot inside the table keeps later slots in place";
    EXPECT_EQ(c.insert("d", sig(4)), 1) << "the hole is reused before the table grows";
    EXPECT_EQ(c.insert("e", sig(5)), 3);
    EXPECT_EQ(layout(c), (std::vector<std::string>{"a/1", "d/4", "c/3", "e/5"}));
}

TEST(ResponseCache, TrailingFreeSlotsAreDropped)
{
    ResponseCache c;
    for (const char *n : {"a", "b", "c", "d"})
        c.insert(n, sig(0));
    c.erase(1);
    c.erase(2);
    EXPECT_EQ(c.slot_count(), 4u);
    // Freeing the last slot drops it and the free slots before it, so the per-cycle state
    // is as short as the highest occupied slot.
    c.erase(3);
    EXPECT_EQ(c.slot_count(), 1u);
    c.erase(0);
    EXPECT_EQ(c.slot_count(), 0u);
    EXPECT_EQ(c.insert("z", sig(0)), 0);
}

TEST(ResponseCache, ReinsertingANameReplacesItAndMayMoveIt)
{
    ResponseCache c;
    c.insert("a", sig(1));
    c.insert("b", sig(2));
    c.insert("c", sig(3));
    c.erase(0);
    // "c" is freed first, then the lowest free slot (0) is taken: the name moves, and its
    // old slot, now trailing, is dropped.
    EXPECT_EQ(c.insert("c", sig(30)), 0);
    EXPECT_EQ(c.find("c"), 0);
    EXPECT_EQ(c.at(0).sig, sig(30));
    EXPECT_EQ(layout(c), (std::vector<std::string>{"c/30", "b/2"}));
    // Replacing in place when no lower slot is free.
    EXPECT_EQ(c.insert("b", sig(20)), 1);
    EXPECT_EQ(layout(c), (std::vector<std::string>{"c/30", "b/20"}));
}

TEST(ResponseCache, ErasingAFreeSlotChangesNothingAndOutOfRangeThrows)
{
    ResponseCache c;
    c.insert("a", sig(1));
    c.insert("b", sig(2));
    c.insert("c", sig(3));
    c.erase(1);
    c.erase(1);
    EXPECT_EQ(layout(c), (std::vector<std::string>{"a/1", "-", "c/3"}));
    EXPECT_THROW(c.erase(3), std::out_of_range);
    EXPECT_THROW(c.erase(-1), std::out_of_range) << "find's -1 is not a slot";
}

TEST(ResponseCache, InstancesFedTheSameSequenceAgreeOnEverySlot)
{
    // Two ranks see the same responses and the same MIN bytes, so they run the same
    // inserts and erases; after each step their slots must be identical.
    std::mt19937 rng(7);
    ResponseCache a;
    ResponseCache b;
    for (int step = 0; step < 20000; ++step) {
        if (a.slot_count() > 0 && rng() % 3 == 0) {
            int slot = static_cast<int>(rng() % a.slot_count());
            a.erase(slot);
            b.erase(slot);
        } else {
            std::string name = "op" + std::to_string(rng() % 200);
            uint64_t count = rng() % 4;
            EXPECT_EQ(a.insert(name, sig(count)), b.insert(name, sig(count)));
        }
        ASSERT_EQ(layout(a), layout(b)) << "step " << step;
        // And the name index agrees with the slots.
        for (size_t i = 0; i < a.slot_count(); ++i) {
            if (a.occupied(static_cast<int>(i))) {
                ASSERT_EQ(a.find(a.at(static_cast<int>(i)).name), static_cast<int>(i));
            }
        }
    }
}

TEST(ResponseCache, SlotsDependOnTheOrderOfInserts)
{
    // The agreement rests on every rank inserting in the coordinator's response order: the
    // same set inserted in another order gives other slots, so a rank's byte for slot 0
    // would speak of another operation than its peer's. The engine therefore inserts only
    // from the broadcast response list (and erases only on the MIN result).
    ResponseCache a;
    ResponseCache b;
    a.insert("x", sig(1));
    a.insert("y", sig(1));
    b.insert("y", sig(1));
    b.insert("x", sig(1));
    EXPECT_NE(a.find("x"), b.find("x"));
    EXPECT_EQ(a.slot_count(), b.slot_count());
    // An erase seen by one rank only leaves the tables of different lengths.
    a.erase(1);
    EXPECT_NE(a.slot_count(), b.slot_count());
}

// The per-slot MIN that the engine runs across ranks, here over local vectors.
std::vector<uint8_t> min_across(const std::vector<std::vector<uint8_t>> &states)
{
    std::vector<uint8_t> out = states.front();
    for (const auto &s : states)
        for (size_t i = 0; i < out.size(); ++i)
            out[i] = std::min(out[i], s[i]);
    return out;
}

TEST(ResponseCache, SlotBytesCombineUnderMinAsTheProtocolNeeds)
{
    // Any rank that holds another signature (invalid) must win over any that has not
    // submitted (absent), which must win over ready: then a slot is ready only when ready
    // on every rank.
    static_assert(ResponseCache::kInvalid < ResponseCache::kAbsent);
    static_assert(ResponseCache::kAbsent < ResponseCache::kReady);
    const uint8_t I = ResponseCache::kInvalid, A = ResponseCache::kAbsent,
                  R = ResponseCache::kReady;
    EXPECT_EQ(min_across({{R, R, R, A}, {R, A, I, R}, {R, R, R, I}}),
              (std::vector<uint8_t>{R, A, I, I}));
}

} // namespace
} // namespace dt

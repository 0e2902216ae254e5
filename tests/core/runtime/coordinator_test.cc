// SPDX-License-Identifier: Apache-2.0
// The coordinator's decisions, driven with explicit time points instead of a clock: an
// operation is ready only when every rank that must take part has submitted it, a
// disagreement or a time-out is an error that names the ranks, joined ranks are left out
// of allreduces only, and a long wait is logged as a stall.
#include "runtime/coordinator.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

using namespace std::chrono_literals;
using Clock = Coordinator::Clock;

const Clock::time_point t0 = Clock::time_point{} + 1h;

// Group 0 is every rank; group 7 is ranks 1 and 3.
std::function<std::vector<int>(uint32_t)> groups_of(int size)
{
    return [size](uint32_t group) {
        if (group == 7)
            return std::vector<int>{1, 3};
        std::vector<int> all;
        for (int r = 0; r < size; ++r)
            all.push_back(r);
        return all;
    };
}

Coordinator make(int size, std::chrono::milliseconds timeout = 0ms,
                 std::chrono::milliseconds stall_warn = 0ms)
{
    return Coordinator(size, timeout, stall_warn, groups_of(size));
}

Record request(const std::string &name, OpKind kind = OpKind::allreduce, uint32_t group = 0)
{
    Record r;
    r.type = Record::Type::request;
    r.name = name;
    r.sig.kind = kind;
    r.sig.dtype = DT_FLOAT32;
    r.sig.count = 16;
    r.sig.group = group;
    return r;
}

Record join()
{
    Record r;
    r.type = Record::Type::join;
    return r;
}

std::vector<std::string> names(const ResponseList &list)
{
    std::vector<std::string> out;
    for (const auto &r : list.responses)
        out.push_back(r.name);
    return out;
}

bool contains(const std::string &s, const std::string &part)
{
    return s.find(part) != std::string::npos;
}

TEST(Coordinator, ReadyOnlyWhenEveryRankSubmitted)
{
    Coordinator c = make(3);
    EXPECT_FALSE(c.has_pending());
    EXPECT_TRUE(c.decide(t0).responses.empty());

    c.add(0, request("a"), t0);
    c.add(2, request("a"), t0);
    EXPECT_TRUE(c.decide(t0).responses.empty()) << "rank 1 has not submitted";
    EXPECT_TRUE(c.has_pending());
    EXPECT_TRUE(c.decide(t0 + 1s).responses.empty()) << "and no time-out is configured";

    c.add(1, request("a"), t0 + 2s);
    ResponseList list = c.decide(t0 + 2s);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].type, Response::Type::ready);
    EXPECT_EQ(list.responses[0].name, "a");
    EXPECT_EQ(list.responses[0].sig, request("a").sig);
    EXPECT_TRUE(list.joined.empty());
    EXPECT_FALSE(c.has_pending());
    EXPECT_TRUE(c.decide(t0 + 3s).responses.empty()) << "a decision is sent once";
}

TEST(Coordinator, ASingleRankIsReadyAtOnce)
{
    Coordinator c = make(1);
    c.add(0, request("solo", OpKind::barrier), t0);
    EXPECT_EQ(names(c.decide(t0)), std::vector<std::string>{"solo"});
}

TEST(Coordinator, ReadyOperationsComeInOrderOfFirstSubmission)
{
    // Every rank runs the response list in order, so it must not depend on the names.
    Coordinator c = make(2);
    for (const char *n : {"z", "a", "m"})
        c.add(1, request(n), t0);
    c.add(0, request("a"), t0);
    c.add(0, request("m"), t0);
    EXPECT_EQ(names(c.decide(t0)), (std::vector<std::string>{"a", "m"}));
    c.add(0, request("z"), t0);
    c.add(0, request("b"), t0);
    c.add(1, request("b"), t0);
    EXPECT_EQ(names(c.decide(t0)), (std::vector<std::string>{"z", "b"}));
}

TEST(Coordinator, ANameCanBeUsedAgainAfterItRan)
{
    Coordinator c = make(2);
    c.add(0, request("step"), t0);
    c.add(1, request("step"), t0);
    EXPECT_EQ(c.decide(t0).responses.size(), 1u);
    // The next round's submission starts a new wait: rank 1's earlier one is gone.
    c.add(0, request("step"), t0 + 1s);
    EXPECT_TRUE(c.decide(t0 + 1s).responses.empty());
    c.add(1, request("step"), t0 + 1s);
    EXPECT_EQ(c.decide(t0 + 1s).responses.size(), 1u);
}

TEST(Coordinator, MismatchIsAnErrorNamingTheFieldAndEachRanksValue)
{
    Coordinator c = make(3);
    Record other = request("grad.w");
    other.sig.dtype = DT_FLOAT64;
    c.add(0, request("grad.w"), t0);
    c.add(1, other, t0);
    c.add(2, request("grad.w"), t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u);
    const Response &r = list.responses[0];
    EXPECT_EQ(r.type, Response::Type::error);
    EXPECT_EQ(r.name, "grad.w");
    EXPECT_EQ(r.status, DT_ERR_MISMATCH);
    EXPECT_TRUE(contains(r.message, "allreduce 'grad.w': ranks disagree on dtype: "
                                    "rank 0 float32, rank 1 float64"))
        << r.message;
    EXPECT_FALSE(c.has_pending());
}

TEST(Coordinator, AMismatchWaitsForEveryRankSoThatALateOneFailsToo)
{
    // The error goes to every rank by name: decided before rank 2 submits, it would leave
    // rank 2's call alone in a new entry, to time out blaming the others, or to pair with
    // their next call of the same name and return another step's data.
    Coordinator c = make(3, 10s);
    Record other = request("step");
    other.sig.count = 8;
    c.add(0, request("step"), t0);
    c.add(1, other, t0);
    EXPECT_TRUE(c.decide(t0).responses.empty()) << "rank 2 has not submitted";
    EXPECT_TRUE(c.has_pending());
    c.add(2, request("step"), t0 + 1s);
    ResponseList list = c.decide(t0 + 1s);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].type, Response::Type::error);
    EXPECT_EQ(list.responses[0].status, DT_ERR_MISMATCH);
    EXPECT_TRUE(contains(list.responses[0].message, "disagree on element count: rank 0 16, "
                                                    "rank 1 8, rank 2 16"))
        << list.responses[0].message;
    EXPECT_FALSE(c.has_pending());

    // The ranks use the name again, agreeing now: a call of its own for each.
    c.add(0, request("step"), t0 + 2s);
    c.add(1, request("step"), t0 + 2s);
    EXPECT_TRUE(c.decide(t0 + 2s).responses.empty()) << "rank 2 has not submitted again";
    c.add(2, request("step"), t0 + 2s);
    list = c.decide(t0 + 2s);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].type, Response::Type::ready);
}

TEST(Coordinator, AMismatchWithARankMissingAtTheTimeOutNamesBoth)
{
    Coordinator c = make(3, 1500ms);
    Record other = request("x");
    other.sig.op = DT_MAX;
    c.add(0, request("x"), t0);
    c.add(2, other, t0);
    EXPECT_TRUE(c.decide(t0 + 1499ms).responses.empty());
    ResponseList list = c.decide(t0 + 1500ms);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].status, DT_ERR_MISMATCH);
    EXPECT_TRUE(contains(list.responses[0].message,
                         "disagree on reduce op: rank 0 sum, rank 2 max"))
        << list.responses[0].message;
    EXPECT_TRUE(contains(list.responses[0].message, "rank 1 did not submit it within "
                                                    "DISTTRAIN_TIMEOUT (1.5 s)"))
        << list.responses[0].message;
    EXPECT_FALSE(c.has_pending());
}

TEST(Coordinator, MismatchOnEachField)
{
    struct Case {
        void (*change)(Record &);
        const char *field;
        const char *values;
    };
    const Case cases[] = {
        {[](Record &r) { r.sig.count = 17; }, "element count", "rank 0 16, rank 1 17"},
        {[](Record &r) { r.sig.op = DT_MAX; }, "reduce op", "rank 0 sum, rank 1 max"},
        {[](Record &r) { r.sig.root = 1; }, "root", "rank 0 0, rank 1 1"},
        {[](Record &r) { r.sig.kind = OpKind::allgather; }, "collective",
         "rank 0 allreduce, rank 1 allgather"},
        {[](Record &r) { r.sig.group = 7; }, "group", "rank 0 0, rank 1 7"},
    };
    for (const Case &k : cases) {
        Coordinator c = make(2);
        Record other = request("x");
        k.change(other);
        c.add(0, request("x"), t0);
        c.add(1, other, t0);
        ResponseList list = c.decide(t0);
        ASSERT_EQ(list.responses.size(), 1u) << k.field;
        EXPECT_EQ(list.responses[0].status, DT_ERR_MISMATCH);
        EXPECT_TRUE(contains(list.responses[0].message,
                             std::string("disagree on ") + k.field + ": " + k.values))
            << list.responses[0].message;
    }
}

TEST(Coordinator, AGroupWaitsOnlyForItsMembers)
{
    Coordinator c = make(4);
    c.add(1, request("g", OpKind::allreduce, 7), t0);
    EXPECT_TRUE(c.decide(t0).responses.empty());
    c.add(3, request("g", OpKind::allreduce, 7), t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u) << "ranks 0 and 2 are not in group 7";
    EXPECT_EQ(list.responses[0].type, Response::Type::ready);
    EXPECT_EQ(list.responses[0].sig.group, 7u);
}

TEST(Coordinator, AGroupItNeverSawCreatedIsLearnedFromTheRecords)
{
    // Group 9 was made inside a group that leaves the coordinator out: only the records
    // say it is ranks 2 and 3.
    Coordinator c = make(4);
    Record r = request("g", OpKind::allreduce, 9);
    r.members = {2, 3};
    c.add(2, r, t0);
    EXPECT_TRUE(c.decide(t0).responses.empty()) << "rank 3 has not submitted";
    c.add(3, r, t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u) << "ranks 0 and 1 are not in group 9";
    EXPECT_EQ(list.responses[0].type, Response::Type::ready);
}

TEST(Coordinator, AJoinedRankIsNotWaitedForInAnAllreduce)
{
    Coordinator c = make(3);
    c.add(2, join(), t0);
    c.add(0, request("a"), t0);
    ResponseList first = c.decide(t0);
    EXPECT_TRUE(first.responses.empty());
    EXPECT_EQ(first.joined, std::vector<int32_t>{2}) << "every rank learns who has joined";
    c.add(1, request("a"), t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].type, Response::Type::ready);
    EXPECT_EQ(list.joined, std::vector<int32_t>{2});
    EXPECT_EQ(c.joined(), (std::set<int>{2}));
}

TEST(Coordinator, OnlyAllreduceRunsWhileARankHasJoined)
{
    Coordinator c = make(3);
    c.add(1, join(), t0);
    c.add(0, request("bc", OpKind::broadcast), t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u);
    const Response &r = list.responses[0];
    EXPECT_EQ(r.type, Response::Type::error);
    EXPECT_EQ(r.status, DT_ERR_INVALID_STATE);
    EXPECT_TRUE(contains(r.message, "broadcast 'bc' cannot run while rank 1 joined"))
        << r.message;
}

TEST(Coordinator, JoinCompletesWhenEveryRankJoinedAndNamesTheLast)
{
    Coordinator c = make(3);
    c.add(2, join(), t0);
    c.add(0, join(), t0);
    EXPECT_TRUE(c.decide(t0).responses.empty());
    c.add(1, join(), t0);
    ResponseList list = c.decide(t0);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].type, Response::Type::join_done);
    EXPECT_EQ(list.responses[0].last_joined, 1);
    EXPECT_TRUE(list.joined.empty()) << "released ranks are no longer listed";
    EXPECT_TRUE(c.joined().empty());

    // A later allreduce waits for every rank again.
    c.add(0, request("after"), t0);
    c.add(1, request("after"), t0);
    EXPECT_TRUE(c.decide(t0).responses.empty());
}

TEST(Coordinator, TimesOutAfterTheConfiguredTimeNamingWhoIsMissing)
{
    Coordinator c = make(4, 1500ms);
    c.add(0, request("slow"), t0);
    c.add(2, request("slow"), t0 + 1s); // the wait counts from the first submission
    EXPECT_TRUE(c.decide(t0 + 1499ms).responses.empty());
    ResponseList list = c.decide(t0 + 1500ms);
    ASSERT_EQ(list.responses.size(), 1u);
    const Response &r = list.responses[0];
    EXPECT_EQ(r.type, Response::Type::error);
    EXPECT_EQ(r.status, DT_ERR_TIMEOUT);
    EXPECT_TRUE(contains(r.message, "allreduce 'slow' was submitted by ranks 0, 2 but ranks 1, "
                                    "3 did not submit it within DISTTRAIN_TIMEOUT (1.5 s)"))
        << r.message;
    EXPECT_FALSE(c.has_pending());
}

TEST(Coordinator, TheTimeOutCountsFromWhenTheEarliestRankBeganWaiting)
{
    // Rank 1's call waited 1.5 s in its response cache before it was sent; rank 2's is
    // fresh. The 2 s count from rank 1's start, not from when the coordinator heard.
    Coordinator c = make(4, 2000ms);
    Record held = request("cached");
    held.waited_us = 1'500'000;
    c.add(2, request("cached"), t0);
    c.add(1, held, t0);
    EXPECT_TRUE(c.decide(t0 + 499ms).responses.empty());
    ResponseList list = c.decide(t0 + 500ms);
    ASSERT_EQ(list.responses.size(), 1u);
    EXPECT_EQ(list.responses[0].status, DT_ERR_TIMEOUT);
    EXPECT_TRUE(contains(list.responses[0].message, "submitted by ranks 1, 2 but ranks 0, 3"))
        << list.responses[0].message;
}

TEST(Coordinator, StallWarningsAfterTheConfiguredTimeAndAgainEachPeriod)
{
    Coordinator c = make(3, 0ms, 100ms);
    c.add(1, request("w"), t0);
    auto warnings_at = [&](Clock::time_point now) {
        testing::internal::CaptureStderr();
        ResponseList list = c.decide(now);
        std::string err = testing::internal::GetCapturedStderr();
        EXPECT_TRUE(list.responses.empty());
        int lines = 0;
        for (size_t at = err.find("warn stall: "); at != std::string::npos;
             at = err.find("warn stall: ", at + 1))
            ++lines;
        if (lines) {
            EXPECT_TRUE(contains(err, "allreduce 'w' submitted by rank 1 has waited 0 s for "
                                      "ranks 0, 2, which have not submitted it"))
                << err;
        }
        return lines;
    };
    EXPECT_EQ(warnings_at(t0 + 99ms), 0);
    EXPECT_EQ(warnings_at(t0 + 100ms), 1);
    EXPECT_EQ(warnings_at(t0 + 150ms), 0) << "not again within the period";
    EXPECT_EQ(warnings_at(t0 + 199ms), 0);
    EXPECT_EQ(warnings_at(t0 + 200ms), 1);
}

TEST(Coordinator, NoStallWarningWhenDisabled)
{
    Coordinator c = make(2);
    c.add(0, request("w"), t0);
    testing::internal::CaptureStderr();
    c.decide(t0 + 24h);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

} // namespace
} // namespace dt

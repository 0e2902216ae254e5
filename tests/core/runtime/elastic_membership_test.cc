// SPDX-License-Identifier: Apache-2.0
// Membership after a re-form: numbering (old ranks first in their order, newcomers after,
// local ranks per host) and the rendezvous in a real store: it closes as soon as the
// ranks believed alive arrived, falls back to the settle time when no death was seen,
// refuses a rank that comes after it closed, and times out below the minimum size. Where
// a launcher publishes deaths (death_notices.h): closes without settling once the dead
// are known, waits for a live rank nobody reported lost up to the deadline and then
// leaves it out, no longer counts a dead joiner, and gives up an epoch whose closer died.
#include "runtime/elastic_membership.h"

#include "bootstrap/store.h"
#include "runtime/death_notices.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

namespace dt {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(ElasticMembership, OldRanksKeepTheirOrderAndNewcomersFollow)
{
    // Tickets in arrival order: old rank 3, a newcomer, old rank 0, old rank 2.
    std::vector<ElasticMember> arrivals = {{3, "b"}, {-1, "a"}, {0, "a"}, {2, "b"}};
    ElasticMembership m = number_members(arrivals, 0);
    ASSERT_EQ(m.size, 4);
    EXPECT_EQ(m.members[0].old_rank, 0);
    EXPECT_EQ(m.members[1].old_rank, 2);
    EXPECT_EQ(m.members[2].old_rank, 3);
    EXPECT_EQ(m.members[3].old_rank, -1);
    EXPECT_EQ(m.rank, 2);
    EXPECT_EQ(m.local_size, 2) << "old ranks 2 and 3 run on host b";
    EXPECT_EQ(m.local_rank, 1);
    ElasticMembership newcomer = number_members(arrivals, 1);
    EXPECT_EQ(newcomer.rank, 3);
    EXPECT_EQ(newcomer.local_rank, 1) << "after old rank 0 on host a";
    EXPECT_EQ(newcomer.local_size, 2);
}

struct Reform : ::testing::Test {
    bootstrap::Auth auth{std::string(64, 'e')};
    bootstrap::StoreServer server{"127.0.0.1:0", auth};
    bool launcher_vouches = false; // each rank reads death notices; launch id = old rank

    ElasticRendezvous survivor(int old_rank, std::vector<int> lost, int old_size,
                               std::chrono::milliseconds settle, int min_size = 1,
                               std::chrono::milliseconds timeout = 10s)
    {
        ElasticRendezvous r;
        r.root = "ctx0/elastic/";
        r.epoch = 1;
        r.me = {old_rank, "host"};
        r.old_size = old_size;
        r.lost = std::move(lost);
        r.min_size = min_size;
        r.settle = settle;
        r.deadline = Clock::now() + timeout;
        return r;
    }

    // Each rendezvous on its own thread and client; the outcome of each.
    std::vector<std::pair<dt_status_t, ElasticMembership>> run(
        const std::vector<ElasticRendezvous> &ranks)
    {
        std::vector<std::future<std::pair<dt_status_t, ElasticMembership>>> results;
        for (const auto &r : ranks)
            results.push_back(std::async(std::launch::async, [&, r] {
                try {
                    bootstrap::StoreClient store(server.address(), auth, 10000ms);
                    ElasticRendezvous mine = r;
                    std::optional<DeathNotices> notices;
                    if (launcher_vouches) {
                        notices.emplace(store);
                        mine.deaths = &*notices;
                        for (int old = 0; old < r.old_size; ++old)
                            mine.old_ids.push_back(old);
                    }
                    return std::make_pair(DT_OK, elastic_rendezvous(store, mine));
                } catch (const Error &e) {
                    return std::make_pair(e.status(), ElasticMembership{});
                }
            }));
        std::vector<std::pair<dt_status_t, ElasticMembership>> out;
        for (auto &f : results)
            out.push_back(f.get());
        return out;
    }

    // The ranks meet after waiting out their settle time (300 ms), and all of them are in.
    void expect_settled(const std::vector<ElasticRendezvous> &ranks)
    {
        auto start = Clock::now();
        auto out = run(ranks);
        auto took = Clock::now() - start;
        EXPECT_GE(took, 300ms);
        EXPECT_LT(took, 5s);
        for (auto &[status, m] : out) {
            ASSERT_EQ(status, DT_OK);
            EXPECT_EQ(m.size, static_cast<int>(ranks.size()));
        }
    }

    // The `early` ranks meet; `late` arrives 200 ms after them. Their outcomes, late last.
    std::vector<std::pair<dt_status_t, ElasticMembership>> run_with_latecomer(
        const std::vector<ElasticRendezvous> &early, const ElasticRendezvous &late)
    {
        auto first = std::async(std::launch::async, [&] { return run(early); });
        std::this_thread::sleep_for(200ms);
        auto last = run({late});
        auto out = first.get();
        out.push_back(last[0]);
        return out;
    }
};

TEST_F(Reform, ClosesAtOnceWhenTheLostRanksAreKnown)
{
    // 4 ranks, rank 1 died and ranks 0 and 3 saw it: no settle time is waited.
    auto start = Clock::now();
    auto out = run({survivor(0, {1}, 4, 30s), survivor(2, {}, 4, 30s), survivor(3, {1}, 4, 30s)});
    EXPECT_LT(Clock::now() - start, 5s);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(out[i].first, DT_OK) << i;
        EXPECT_EQ(out[i].second.size, 3);
        EXPECT_EQ(out[i].second.rank, i) << "old ranks 0, 2, 3 become 0, 1, 2";
    }
}

TEST_F(Reform, ClosesAfterTheSettleTimeWhenNoDeathWasSeen)
{
    expect_settled({survivor(0, {}, 3, 300ms), survivor(1, {}, 3, 300ms)});
}

TEST_F(Reform, ARankArrivingAfterItClosedIsToldSo)
{
    auto first = run({survivor(0, {2}, 3, 30s), survivor(1, {2}, 3, 30s)});
    for (auto &[status, m] : first)
        ASSERT_EQ(status, DT_OK);
    auto late = run({survivor(2, {}, 3, 30s)});
    EXPECT_EQ(late[0].first, DT_ERR_INVALID_STATE);
}

TEST_F(Reform, AJoinerWaitsForTheNextReformAndIsCountedIn)
{
    // A joiner registers while the job runs; the survivors' next re-form waits for it
    // (no settle time) and numbers it after them; then nobody waits any more.
    auto joiner = std::async(std::launch::async, [&] {
        bootstrap::StoreClient store(server.address(), auth, 10000ms);
        ElasticRendezvous r = survivor(-1, {}, 0, 30s);
        return elastic_join(store, r);
    });
    bootstrap::StoreClient probe(server.address(), auth, 10000ms);
    auto until = Clock::now() + 5s;
    while (waiting_joiners(probe, "ctx0/elastic/") == 0 && Clock::now() < until)
        std::this_thread::sleep_for(1ms);
    ASSERT_EQ(waiting_joiners(probe, "ctx0/elastic/"), 1);
    auto start = Clock::now();
    auto out = run({survivor(0, {}, 2, 30s), survivor(1, {}, 2, 30s)});
    EXPECT_LT(Clock::now() - start, 5s);
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(out[i].first, DT_OK);
        EXPECT_EQ(out[i].second.size, 3);
        EXPECT_EQ(out[i].second.rank, i);
    }
    auto [m, epoch] = joiner.get();
    EXPECT_EQ(m.rank, 2);
    EXPECT_EQ(m.size, 3);
    EXPECT_EQ(epoch, 1u);
    EXPECT_EQ(waiting_joiners(probe, "ctx0/elastic/"), 0);
}

TEST_F(Reform, FewerThanTheMinimumTimesOutOnEveryRank)
{
    auto start = Clock::now();
    auto out = run({survivor(0, {1, 2}, 4, 0ms, 3, 500ms), survivor(3, {1, 2}, 4, 0ms, 3, 500ms)});
    EXPECT_LT(Clock::now() - start, 5s);
    for (auto &[status, m] : out)
        EXPECT_EQ(status, DT_ERR_TIMEOUT);
}

TEST_F(Reform, ARankReportedLostThatArrivesIsCountedIn)
{
    // Rank 2 died; rank 0 also saw rank 1's connection close (rank 1 left to re-form
    // first) and reports both. Rank 1's arrival cancels that report, so the meeting still
    // waits for rank 3, which arrives last, instead of closing with ranks 0 and 1.
    auto out = run_with_latecomer({survivor(0, {1, 2}, 4, 30s), survivor(1, {2}, 4, 30s)},
                                  survivor(3, {2}, 4, 30s));
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(out[i].first, DT_OK) << i;
        EXPECT_EQ(out[i].second.size, 3) << i;
        EXPECT_EQ(out[i].second.rank, i) << "old ranks 0, 1, 3 become 0, 1, 2";
    }
}

TEST_F(Reform, AJoinerThatGivesUpIsNoLongerCountedAsWaiting)
{
    // Nobody re-forms: the joiner times out, and withdraws, so the ranks do not re-form
    // (and wait their settle time) for it at every later step boundary.
    bootstrap::StoreClient store(server.address(), auth, 10000ms);
    ElasticRendezvous r = survivor(-1, {}, 0, 30s, 1, 200ms);
    try {
        elastic_join(store, r);
        ADD_FAILURE() << "the join should have timed out";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_TIMEOUT);
    }
    EXPECT_EQ(waiting_joiners(store, "ctx0/elastic/"), 0);
}

TEST_F(Reform, ClosesWithoutSettlingWhenTheLauncherSaysWhoDied)
{
    // 3 ranks; rank 2 died and no survivor saw it: the launcher's notice closes at once.
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    deaths.publish(2);
    launcher_vouches = true;
    auto start = Clock::now();
    auto out = run({survivor(0, {}, 3, 30s), survivor(1, {}, 3, 30s)});
    EXPECT_LT(Clock::now() - start, 5s);
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(out[i].first, DT_OK) << i;
        EXPECT_EQ(out[i].second.size, 2);
        EXPECT_EQ(out[i].second.rank, i);
    }
}

TEST_F(Reform, WithDeathNoticesARankOnlyReportedLostIsWaitedFor)
{
    // Rank 3 died. Rank 2 left to re-form first, and its connections closed before it
    // arrived, so rank 0 and rank 1 report it lost too. The launcher never said it died:
    // the meeting waits for it rather than closing with ranks 0 and 1.
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    deaths.publish(3);
    launcher_vouches = true;
    auto out = run_with_latecomer({survivor(0, {2, 3}, 4, 30s), survivor(1, {2, 3}, 4, 30s)},
                                  survivor(2, {3}, 4, 30s));
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(out[i].first, DT_OK) << i;
        EXPECT_EQ(out[i].second.size, 3) << i;
        EXPECT_EQ(out[i].second.rank, i) << i;
    }
}

TEST_F(Reform, WithDeathNoticesARankReportedLostThatNeverComesIsLeftAfterTheSettleTime)
{
    // Rank 1 is reported lost and never arrives, but the launcher saw no death (a hung
    // process, a broken network): the others go on without it once arrivals settle.
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher); // publishes none
    launcher_vouches = true;
    expect_settled({survivor(0, {1}, 3, 300ms), survivor(2, {1}, 3, 300ms)});
}

TEST_F(Reform, WithDeathNoticesARankNobodyReportedLostIsWaitedForPastTheSettleTime)
{
    // Rank 1 died and rank 0 saw it; rank 2 is alive but comes late (a long step), and
    // nobody reported it lost. No settle time leaves it out: the meeting waits for it.
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    deaths.publish(1);
    launcher_vouches = true;
    auto out = run_with_latecomer({survivor(0, {1}, 3, 0ms)}, survivor(2, {}, 3, 0ms));
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(out[i].first, DT_OK) << i;
        EXPECT_EQ(out[i].second.size, 2) << i;
        EXPECT_EQ(out[i].second.rank, i) << i;
    }
}

TEST_F(Reform, WithDeathNoticesALiveRankThatNeverComesIsLeftOutAtTheDeadline)
{
    // Rank 1 died; rank 2 is alive but does not come before rank 0's deadline (a step
    // longer than DISTTRAIN_TIMEOUT): rank 0 goes on alone, and rank 2 is told why.
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    deaths.publish(1);
    launcher_vouches = true;
    auto out = run({survivor(0, {1}, 3, 30s, 1, 300ms)});
    ASSERT_EQ(out[0].first, DT_OK);
    EXPECT_EQ(out[0].second.size, 1);

    bootstrap::StoreClient store(server.address(), auth, 10000ms);
    DeathNotices notices(store);
    ElasticRendezvous late = survivor(2, {}, 3, 30s);
    late.deaths = &notices;
    late.old_ids = {0, 1, 2};
    try {
        elastic_rendezvous(store, late);
        ADD_FAILURE() << "the job re-formed without rank 2";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_STATE);
        EXPECT_NE(std::string(e.what()).find("waited DISTTRAIN_TIMEOUT for it"),
                  std::string::npos)
            << e.what();
    }
}

TEST_F(Reform, WithoutDeathNoticesTheSettleTimeStillPasses)
{
    // The same rendezvous in a store nobody publishes deaths in (served elsewhere).
    launcher_vouches = true;
    expect_settled({survivor(0, {}, 3, 300ms), survivor(1, {}, 3, 300ms)});
}

TEST_F(Reform, AJoinerKilledWhileWaitingIsNoLongerCounted)
{
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    bootstrap::StoreClient store(server.address(), auth, 10000ms);
    // What a joiner with launch id 7 does first (elastic_join), before it is killed.
    store.add("ctx0/elastic/joiners", 1);
    store.set("ctx0/elastic/joiner/7", "waiting");
    DeathNotices notices(store);
    EXPECT_EQ(waiting_joiners(store, "ctx0/elastic/", &notices), 1);
    deaths.publish(7);
    EXPECT_EQ(waiting_joiners(store, "ctx0/elastic/", &notices), 0);
    // Another rank reading the same notice does not count it out twice.
    bootstrap::StoreClient other(server.address(), auth, 10000ms);
    DeathNotices theirs(other);
    EXPECT_EQ(waiting_joiners(other, "ctx0/elastic/", &theirs), 0);
    EXPECT_EQ(store.add("ctx0/elastic/admitted", 0), 1);
}

TEST_F(Reform, AnEpochWhoseCloserDiedIsGivenUp)
{
    // Old rank 1 arrived in epoch 1, claimed the close and died before closing it: rank
    // 0 must not wait for a close that will never come.
    bootstrap::StoreClient store(server.address(), auth, 10000ms);
    const std::string p = "ctx0/elastic/1/";
    store.add(p + "state/1", int64_t{1} << 40);
    store.add(p + "arrived", 1);
    store.set(p + "arrival/0", "1 host 1");
    store.set(p + "in/1", "1");
    store.add(p + "old_arrived", 1);
    store.add(p + "closer", 1);
    bootstrap::StoreClient launcher(server.address(), auth, 10000ms);
    DeathPublisher deaths(launcher);
    deaths.publish(1);
    launcher_vouches = true;
    auto start = Clock::now();
    auto out = run({survivor(0, {}, 2, 30s)});
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_EQ(out[0].first, DT_ERR_PEER_LOST);
}

} // namespace
} // namespace dt

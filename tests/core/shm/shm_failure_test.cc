// SPDX-License-Identifier: Apache-2.0
// A shared-memory wait never hangs: it ends with an error naming the rank when the
// deadline passes, when the peer marked itself failed, when it destroyed its domain, or
// when this rank's context is aborted.
#include "shm_harness.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace dt::shm::testing {
namespace {

using namespace std::chrono_literals;

// Runs an allreduce on rank 0 only (with its own deadline) and returns the error.
std::pair<dt_status_t, std::string> lonely_allreduce(Rank &r, std::chrono::milliseconds timeout,
                                                     const std::atomic<bool> *cancel = nullptr)
{
    std::vector<float> buf(1000, 1.0f);
    try {
        r.current = r.all;
        TeamArgs a;
        a.locals = r.current.data();
        a.size = r.size;
        a.rank = r.rank;
        a.tag = r.next_tag++;
        a.deadline = Clock::now() + timeout;
        a.cancel = cancel;
        a.what = "allreduce";
        Team t(*r.domain, a);
        allreduce(t, buf.data(), buf.data(), buf.size(), DT_FLOAT32, DT_SUM);
    } catch (const Error &e) {
        return {e.status(), e.what()};
    }
    return {DT_OK, ""};
}

TEST(ShmFailure, DeadlineNamesTheMissingRank)
{
    std::atomic<bool> done{false};
    std::pair<dt_status_t, std::string> result;
    auto start = Clock::now();
    auto errors = run_threads(2, 64 * 1024, [&](Rank &r) {
        if (r.rank == 0) {
            result = lonely_allreduce(r, 300ms);
            done = true;
        } else {
            while (!done)
                std::this_thread::sleep_for(1ms);
        }
    });
    EXPECT_LT(Clock::now() - start, 10s);
    EXPECT_EQ(result.first, DT_ERR_TIMEOUT);
    EXPECT_NE(result.second.find("rank 1"), std::string::npos) << result.second;
    EXPECT_NE(result.second.find("DISTTRAIN_TIMEOUT"), std::string::npos) << result.second;
}

TEST(ShmFailure, PeerThatFailedIsNamedAtOnce)
{
    std::atomic<bool> done{false};
    std::pair<dt_status_t, std::string> result;
    auto start = Clock::now();
    run_threads(2, 64 * 1024, [&](Rank &r) {
        if (r.rank == 0) {
            result = lonely_allreduce(r, 30s);
            done = true;
        } else {
            std::this_thread::sleep_for(50ms);
            r.domain->mark_failed("allreduce: rank 7 (pid 1) exited");
            while (!done)
                std::this_thread::sleep_for(1ms);
        }
    });
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_EQ(result.first, DT_ERR_PEER_LOST);
    EXPECT_NE(result.second.find("rank 1 failed"), std::string::npos) << result.second;
    // The failed peer's own reason travels along: it names the rank at the root.
    EXPECT_NE(result.second.find("rank 7 (pid 1) exited"), std::string::npos) << result.second;
}

TEST(ShmFailure, PeerThatLeftIsNamedAtOnce)
{
    std::pair<dt_status_t, std::string> result;
    auto start = Clock::now();
    run_threads(2, 64 * 1024, [&](Rank &r) {
        if (r.rank == 0)
            result = lonely_allreduce(r, 30s);
        else
            std::this_thread::sleep_for(50ms); // then its Domain is destroyed
    });
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_EQ(result.first, DT_ERR_PEER_LOST);
    EXPECT_NE(result.second.find("rank 1 has destroyed its context"), std::string::npos)
        << result.second;
}

TEST(ShmFailure, AbortEndsTheWait)
{
    std::atomic<bool> cancel{false}, done{false};
    std::pair<dt_status_t, std::string> result;
    run_threads(2, 64 * 1024, [&](Rank &r) {
        if (r.rank == 0) {
            result = lonely_allreduce(r, 30s, &cancel);
            done = true;
        } else {
            std::this_thread::sleep_for(50ms);
            cancel = true;
            while (!done)
                std::this_thread::sleep_for(1ms);
        }
    });
    EXPECT_EQ(result.first, DT_ERR_ABORTED);
}

TEST(ShmFailure, FailedDomainRefusesLaterCalls)
{
    auto errors = run_threads(1, 64 * 1024, [&](Rank &r) {
        r.domain->mark_failed();
        EXPECT_THROW(r.team(), Error);
    });
    EXPECT_EQ(errors[0], "");
}

} // namespace
} // namespace dt::shm::testing

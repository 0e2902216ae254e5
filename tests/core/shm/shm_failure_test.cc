// SPDX-License-Identifier: Apache-2.0
// A shared-memory wait never hangs: it ends with an error naming the rank when the
// deadline passes, when the peer marked itself failed, when it destroyed its domain, or
// when this rank's context is aborted; and a peer that did its part before it left is
// not blamed.
#include "shm_harness.h"

#include "algorithms/comm.h"
#include "mem_transport.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace dt::shm::testing {
namespace {

using namespace std::chrono_literals;

// The arguments of a call of every rank, as Rank::team gives, with a deadline of its own.
TeamArgs whole_team(Rank &r, std::chrono::milliseconds timeout, const char *what)
{
    r.current = r.all;
    TeamArgs a;
    a.locals = r.current.data();
    a.size = r.size;
    a.rank = r.rank;
    a.tag = r.next_tag++;
    a.deadline = Clock::now() + timeout;
    a.what = what;
    return a;
}

// Runs an allreduce on rank 0 only (with its own deadline) and returns the error.
std::pair<dt_status_t, std::string> lonely_allreduce(Rank &r, std::chrono::milliseconds timeout,
                                                     const std::atomic<bool> *cancel = nullptr)
{
    std::vector<float> buf(1000, 1.0f);
    try {
        TeamArgs a = whole_team(r, timeout, "allreduce");
        a.cancel = cancel;
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

TEST(ShmFailure, APeerThatDidItsPartAndThenLeftIsNotBlamed)
{
    // Rank 1 broadcasts only once rank 0 looks for its notice on the transport, and the
    // notice says it left once the broadcast is done: what a peer that finishes its part
    // and destroys its context between rank 0's look at the flag and at the transport
    // looks like. A broadcast root does not wait for its readers.
    dt::test::MemFabric fabric(2);
    std::unique_ptr<Transport> transport = fabric.make_transport(0);
    algo::Comm comm(*transport, 0, 2, 1, Clock::now() + 30s, "broadcast");
    std::atomic<bool> go{false}, sent{false}, done{false};
    comm.set_departure_check([&](int peer) {
        algo::Comm::Departure left;
        if (peer != 1)
            return left;
        go = true;
        for (auto until = Clock::now() + 10s; !sent && Clock::now() < until;)
            std::this_thread::sleep_for(1ms);
        left.clean = true;
        left.notice = "rank 1 has destroyed its context";
        return left;
    });
    const size_t count = 1000;
    std::vector<float> got(count, 0.0f);
    std::pair<dt_status_t, std::string> result{DT_ERR_INTERNAL, "rank 0 did not run"};
    auto errors = run_threads(2, 64 * 1024, [&](Rank &r) {
        if (r.rank == 1) {
            while (!go)
                std::this_thread::sleep_for(1ms);
            std::vector<float> data(count, 7.0f);
            Team t = r.team();
            broadcast(t, data.data(), count * sizeof(float), 1);
            sent = true;
            while (!done)
                std::this_thread::sleep_for(1ms);
            return;
        }
        try {
            TeamArgs a = whole_team(r, 30s, "broadcast");
            a.comm = &comm;
            Team t(*r.domain, a);
            broadcast(t, got.data(), count * sizeof(float), 1);
            result = {DT_OK, ""};
        } catch (const Error &e) {
            result = {e.status(), e.what()};
        }
        done = true;
    });
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(result.first, DT_OK) << result.second;
    EXPECT_EQ(got, std::vector<float>(count, 7.0f));
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

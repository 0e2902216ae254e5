// SPDX-License-Identifier: Apache-2.0
// Choosing the host transport together, in a real store: a transport counts as chosen on
// every rank or on none. A rank that starts it just after rank 0's deadline must not go
// on with it alone; a rank that gives it up stops the others at once, and so does the job
// giving it up while they wait for rank 0's verdict.
#include "runtime/transport_choice.h"

#include "bootstrap/store.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace dt {
namespace {

using namespace std::chrono_literals;
using Clock = TransportChoice::Clock;

struct Choice : ::testing::Test {
    bootstrap::Auth auth{std::string(64, 't')};
    bootstrap::StoreServer server{"127.0.0.1:0", auth};

    // confirm_started on one rank of `size`, in its own client; the status it ended with.
    std::future<dt_status_t> start(int rank, int size, std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds delay = 0ms)
    {
        return std::async(std::launch::async, [=, this] {
            std::this_thread::sleep_for(delay);
            bootstrap::StoreClient store(server.address(), auth, 10000ms);
            TransportChoice choice(store, "ctx0/", rank, size, Clock::now() + timeout);
            try {
                choice.confirm_started("tcp");
                return DT_OK;
            } catch (const Error &e) {
                return e.status();
            }
        });
    }
};

TEST_F(Choice, EveryRankStartedIsChosenEverywhere)
{
    auto r0 = start(0, 3, 5s), r1 = start(1, 3, 5s, 50ms), r2 = start(2, 3, 5s, 100ms);
    EXPECT_EQ(r0.get(), DT_OK);
    EXPECT_EQ(r1.get(), DT_OK);
    EXPECT_EQ(r2.get(), DT_OK);
}

TEST_F(Choice, ARankThatStartsAfterRankZerosDeadlineDoesNotGoOnAlone)
{
    // Rank 0's deadline passes with 2 of 3 started; rank 2 starts afterwards with time of
    // its own left. Counting for itself it would see 3 of 3 and go on with a transport
    // rank 0 has given up.
    auto r0 = start(0, 3, 300ms), r1 = start(1, 3, 5s);
    auto late = start(2, 3, 5s, 800ms);
    EXPECT_EQ(r0.get(), DT_ERR_TIMEOUT);
    EXPECT_EQ(r1.get(), DT_ERR_TIMEOUT);
    EXPECT_EQ(late.get(), DT_ERR_TIMEOUT);
}

TEST_F(Choice, ARankThatGivesUpStopsTheOthersAtOnce)
{
    auto r0 = start(0, 3, 10s), r1 = start(1, 3, 10s);
    {
        bootstrap::StoreClient store(server.address(), auth, 10000ms);
        TransportChoice choice(store, "ctx0/", 2, 3, Clock::now() + 10s);
        std::this_thread::sleep_for(100ms);
        choice.abandon("tcp", "its plugin is not installed");
    }
    auto t0 = Clock::now();
    EXPECT_EQ(r0.get(), DT_ERR_CONNECT);
    EXPECT_EQ(r1.get(), DT_ERR_CONNECT);
    EXPECT_LT(Clock::now() - t0, 5s) << "not waited out to the deadline";
}

TEST_F(Choice, ARankWaitingForTheVerdictStopsWhenTheJobGivesTheTransportUp)
{
    // Rank 1 started the transport and waits for rank 0's verdict. Rank 0 never gets that
    // far: a member died while the job connected and the job gave the transport up (what
    // a member death watch writes), so rank 0's own start failed and it says nothing.
    auto r1 = start(1, 3, 10s);
    bootstrap::StoreClient store(server.address(), auth, 10000ms);
    std::this_thread::sleep_for(100ms);
    store.set(TransportChoice::abandon_key_in("ctx0/", "tcp"),
              "rank 2 (launch id 2) died while the re-formed job connected");
    EXPECT_EQ(r1.get(), DT_ERR_CONNECT);
}

} // namespace
} // namespace dt

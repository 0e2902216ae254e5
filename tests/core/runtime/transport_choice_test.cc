// SPDX-License-Identifier: Apache-2.0
// Choosing the host transport together, in a real store: a transport counts as chosen on
// every rank or on none. A rank that starts it just after rank 0's deadline must not go
// on with it alone; a rank that gives it up stops the others at once, and so does the job
// giving it up while they wait for rank 0's verdict.
#include "runtime/transport_choice.h"

#include "../bootstrap/bootstrap_test_util.h"
#include "bootstrap/store.h"
#include "bootstrap/store_handshake.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <functional>
#include <future>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace dt {
namespace {

using namespace std::chrono_literals;
using Clock = TransportChoice::Clock;

using bootstrap::test::error_of;

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

// Rank 0 served the store and exited while rank 2 waited in a transport's set-up for rank
// 1's address: the wait, and the abandon notice rank 2 would read and leave next, each
// fail at once saying the store closed. Taking the store for one not started yet, each
// would wait out the timeout and then read as "no notice".
TEST(ChoiceWithoutStore, AStoreThatClosedEndsTheWaitAndTheNoticesAtOnce)
{
    bootstrap::Auth auth{std::string(64, 't')};
    auto server = std::make_unique<bootstrap::StoreServer>("127.0.0.1:0", auth);
    bootstrap::StoreClient store(server->address(), auth, 3000ms, "DISTTRAIN_STORE_ADDR", "rank 0");
    TransportChoice choice(store, "ctx0/", 2, 3, Clock::now() + 60s);
    auto waiting = std::async(std::launch::async, [&] {
        return error_of([&] {
            get_unless_abandoned(store, "ctx0/tcp/addr/1", choice.abandon_key("tcp"),
                                 choice.deadline());
        }, DT_ERR_STORE);
    });
    std::this_thread::sleep_for(100ms);
    server.reset();
    const std::string closed = "(served by rank 0) closed";
    std::string msg = waiting.get();
    EXPECT_NE(msg.find(closed), std::string::npos) << msg;
    msg = error_of([&] { choice.abandoned("tcp"); }, DT_ERR_STORE);
    EXPECT_NE(msg.find(closed), std::string::npos) << msg;
    msg = error_of([&] { choice.abandon("tcp", "its plugin failed"); }, DT_ERR_STORE);
    EXPECT_NE(msg.find(closed), std::string::npos) << msg;
}

// A store that accepts and authenticates every connection, then never answers a request.
struct SilentStore {
    bootstrap::Auth auth{std::string(64, 't')};
    bootstrap::Fd listener;
    uint16_t port = 0;
    std::atomic<bool> stop{false};
    std::vector<bootstrap::Fd> held;
    std::thread server;

    SilentStore()
    {
        listener.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listener.get(), 16), 0);
        socklen_t len = sizeof a;
        ::getsockname(listener.get(), reinterpret_cast<sockaddr *>(&a), &len);
        port = ntohs(a.sin_port);
        server = std::thread([this] {
            while (!stop) {
                pollfd p{listener.get(), POLLIN, 0};
                if (::poll(&p, 1, 20) != 1)
                    continue;
                bootstrap::Fd conn(::accept(listener.get(), nullptr, nullptr));
                bootstrap::server_handshake(conn.get(), auth,
                                            bootstrap::Deadline::after(5000ms), -1);
                held.push_back(std::move(conn));
            }
        });
    }
    ~SilentStore()
    {
        stop = true;
        server.join();
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

// A store that falls silent (its host is gone) ends a wait with its own error. Were it
// taken for an absent key, every poll of the wait, and every wait after it, would wait for
// the store again.
TEST(ChoiceWithoutStore, AStoreThatFallsSilentEndsTheWaitNamingTheStore)
{
    SilentStore silent;
    bootstrap::StoreClient store(silent.address(), silent.auth, 300ms);
    std::string msg = error_of([&] {
        get_unless_abandoned(store, "ctx0/tcp/addr/1", "ctx0/transport/tcp/abandoned",
                             Clock::now() + 200ms);
    }, DT_ERR_TIMEOUT);
    EXPECT_NE(msg.find("the rendezvous store at " + silent.address() +
                       " did not answer a get of key 'ctx0/tcp/addr/1'"),
              std::string::npos)
        << msg;
    EXPECT_NE(store.lost(), std::nullopt);
}

TEST(NoTransportStatus, ABadVariableIsTheStatusWhateverElseFailed)
{
    // A malformed DISTTRAIN_TCP_* made tcp fail: the user's fix, even after ucx failed
    // to load and mpi could not connect.
    EXPECT_EQ(no_transport_status({DT_ERR_PLUGIN_LOAD, DT_ERR_CONNECT, DT_ERR_INVALID_CONFIG}),
              DT_ERR_INVALID_CONFIG);
    EXPECT_EQ(no_transport_status({DT_ERR_INVALID_CONFIG}), DT_ERR_INVALID_CONFIG);
}

TEST(NoTransportStatus, ATransportThatLoadedButDidNotStartComesNext)
{
    EXPECT_EQ(no_transport_status({DT_ERR_PLUGIN_NOT_FOUND, DT_ERR_CONNECT, DT_ERR_TIMEOUT}),
              DT_ERR_CONNECT);
    EXPECT_EQ(no_transport_status({DT_ERR_PLUGIN_ABI, DT_ERR_TIMEOUT}), DT_ERR_TIMEOUT);
}

TEST(NoTransportStatus, PluginNotFoundOnlyWhenNoPluginCouldBeUsed)
{
    EXPECT_EQ(no_transport_status({DT_ERR_PLUGIN_NOT_FOUND, DT_ERR_PLUGIN_LOAD}),
              DT_ERR_PLUGIN_NOT_FOUND);
    EXPECT_EQ(no_transport_status({}), DT_ERR_PLUGIN_NOT_FOUND);
}

} // namespace
} // namespace dt

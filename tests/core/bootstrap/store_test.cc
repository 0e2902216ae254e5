// SPDX-License-Identifier: Apache-2.0
// The rendezvous store's commands between a server and clients on loopback.
#include "bootstrap/store.h"

#include "bootstrap_test_util.h"

#include <atomic>
#include <future>
#include <set>
#include <thread>
#include <vector>

namespace dt::bootstrap {
namespace {

using namespace std::chrono_literals;
using test::error_of;

const std::string kToken = "0123456789abcdef0123456789abcdef";

struct StoreTest : ::testing::Test {
    StoreServer server{"127.0.0.1:0", Auth(kToken)};
    StoreClient client() { return StoreClient(server.address(), Auth(kToken), 5000ms); }
};

TEST_F(StoreTest, ReportsTheRealPort)
{
    std::string addr = server.address();
    EXPECT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
    EXPECT_NE(test::port_of(addr), 0);
}

TEST_F(StoreTest, SetThenGet)
{
    StoreClient c = client();
    c.set("a", "1");
    c.set("bin", std::string("\0\xff\n", 3));
    EXPECT_EQ(c.get("a", 1000ms), "1");
    EXPECT_EQ(c.get("bin", 1000ms), std::string("\0\xff\n", 3));
    c.set("a", "2"); // overwrite
    EXPECT_EQ(c.get("a", 0ms), "2");
    EXPECT_EQ(c.get("a", -1ms), "2");
    EXPECT_EQ(c.address(), server.address());
}

TEST_F(StoreTest, EmptyAndLargeValues)
{
    StoreClient c = client();
    c.set("empty", "");
    EXPECT_EQ(c.get("empty", 1000ms), "");
    std::string big(4 << 20, 'x');
    for (size_t i = 0; i < big.size(); i += 4096)
        big[i] = static_cast<char>(i / 4096);
    c.set("big", big);
    EXPECT_EQ(c.get("big", 1000ms), big);
}

TEST_F(StoreTest, GetWaitsForALaterSet)
{
    StoreClient reader = client();
    StoreClient writer = client();
    auto start = std::chrono::steady_clock::now();
    auto value = std::async(std::launch::async, [&] { return reader.get("late", 10000ms); });
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(value.wait_for(0ms), std::future_status::timeout) << "get did not wait";
    writer.set("late", "here");
    EXPECT_EQ(value.get(), "here");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(StoreTest, GetTimeoutNamesTheKey)
{
    StoreClient c = client();
    auto start = std::chrono::steady_clock::now();
    std::string msg = error_of([&] { c.get("never/set", 150ms); }, DT_ERR_TIMEOUT);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_NE(msg.find("'never/set'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("150 ms"), std::string::npos) << msg;
    EXPECT_NE(msg.find(server.address()), std::string::npos) << msg;
    EXPECT_GE(took, 140ms);
    EXPECT_LT(took, 3s);
    // The connection is still good after a timed-out get.
    c.set("after", "ok");
    EXPECT_EQ(c.get("after", 100ms), "ok");
}

TEST_F(StoreTest, AddIsAnAtomicCounter)
{
    StoreClient c = client();
    EXPECT_EQ(c.add("n", 5), 5);
    EXPECT_EQ(c.add("n", -2), 3);
    EXPECT_EQ(c.add("n", 0), 3);
    EXPECT_EQ(c.get("n", 100ms), "3");
    c.set("text", "abc");
    std::string msg = error_of([&] { c.add("text", 1); }, DT_ERR_STORE);
    EXPECT_NE(msg.find("'text'"), std::string::npos) << msg;
    c.set("big", "9223372036854775807");
    error_of([&] { c.add("big", 1); }, DT_ERR_STORE);
    EXPECT_EQ(c.add("n", 1), 4); // still usable after errors
}

TEST_F(StoreTest, ManyClientThreads)
{
    constexpr int kThreads = 8, kAdds = 50;
    StoreClient shared = client();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                StoreClient own = client();
                for (int i = 0; i < kAdds; ++i) {
                    own.add("counter", 1);
                    shared.add("shared-counter", 1); // one client, many threads
                }
                own.set("ready/" + std::to_string(t), std::to_string(t * t));
                std::vector<std::string> keys;
                for (int r = 0; r < kThreads; ++r)
                    keys.push_back("ready/" + std::to_string(r));
                own.wait(keys, 10000ms);
                for (int r = 0; r < kThreads; ++r)
                    if (shared.get("ready/" + std::to_string(r), 0ms) != std::to_string(r * r))
                        ++failures;
            } catch (const std::exception &e) {
                ADD_FAILURE() << e.what();
                ++failures;
            }
        });
    }
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(failures.load(), 0);
    StoreClient c = client();
    EXPECT_EQ(c.add("counter", 0), kThreads * kAdds);
    EXPECT_EQ(c.add("shared-counter", 0), kThreads * kAdds);
}

TEST_F(StoreTest, WaitTimeoutNamesTheMissingKeys)
{
    StoreClient c = client();
    c.set("present", "1");
    c.wait({}, 10ms);
    c.wait({"present"}, 10ms);
    std::string msg =
        error_of([&] { c.wait({"present", "gone/1", "gone/2"}, 100ms); }, DT_ERR_TIMEOUT);
    EXPECT_NE(msg.find("'gone/1', 'gone/2'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 of 3 keys"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("'present'"), std::string::npos) << msg;
}

TEST_F(StoreTest, BadKeysAreCallerErrors)
{
    StoreClient c = client();
    error_of([&] { c.set("", "v"); }, DT_ERR_INVALID_ARGUMENT);
    error_of([&] { c.get(std::string(5000, 'k'), 10ms); }, DT_ERR_INVALID_ARGUMENT);
    c.set("fine", "v"); // the connection was never touched
}

TEST_F(StoreTest, ClientWaitsForAServerThatStartsLater)
{
    uint16_t port = test::free_port();
    std::string addr = "127.0.0.1:" + std::to_string(port);
    auto connected = std::async(std::launch::async, [&] {
        StoreClient c(addr, Auth(kToken), 10000ms);
        return c.get("hello", 5000ms);
    });
    std::this_thread::sleep_for(300ms);
    StoreServer late(addr, Auth(kToken));
    StoreClient(late.address(), Auth(kToken), 5000ms).set("hello", "world");
    EXPECT_EQ(connected.get(), "world");
}

TEST(StoreServerTest, BindFailureIsAConnectError)
{
    StoreServer first("127.0.0.1:0", Auth("t"));
    std::string msg =
        error_of([&] { StoreServer second(first.address(), Auth("t")); }, DT_ERR_CONNECT);
    EXPECT_NE(msg.find(first.address()), std::string::npos) << msg;
}

TEST(StoreServerTest, WildcardBindReportsAUsableAddress)
{
    StoreServer server("0.0.0.0:0", Auth("t"));
    EXPECT_EQ(server.address().find("0.0.0.0"), std::string::npos) << server.address();
    EXPECT_NO_THROW(parse_host_port("address", server.address()));
}

TEST(StoreServerTest, Ipv6Loopback)
{
    std::unique_ptr<StoreServer> server;
    try {
        server = std::make_unique<StoreServer>("[::1]:0", Auth("t"));
    } catch (const Error &e) {
        GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
    }
    EXPECT_EQ(server->address().rfind("[::1]:", 0), 0u) << server->address();
    StoreClient c(server->address(), Auth("t"), 5000ms);
    c.set("k", "v6");
    EXPECT_EQ(c.get("k", 100ms), "v6");
}

TEST(StoreServerTest, ShutdownReleasesBlockedClients)
{
    auto server = std::make_unique<StoreServer>("127.0.0.1:0", Auth("t"));
    StoreClient c(server->address(), Auth("t"), 2000ms);
    auto blocked = std::async(std::launch::async, [&] {
        try {
            c.get("forever", -1ms);
        } catch (const Error &e) {
            return e.status();
        }
        return DT_OK;
    });
    std::this_thread::sleep_for(100ms);
    auto start = std::chrono::steady_clock::now();
    server.reset(); // must not wait for the blocked get
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    ASSERT_EQ(blocked.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(blocked.get(), DT_ERR_STORE);
}

TEST(StoreServerTest, ClientReconnectsAfterAFailedCall)
{
    uint16_t port = test::free_port();
    std::string addr = "127.0.0.1:" + std::to_string(port);
    auto server = std::make_unique<StoreServer>(addr, Auth("t"));
    StoreClient c(addr, Auth("t"), 2000ms);
    c.set("k", "1");
    server.reset();
    error_of([&] { c.set("k", "2"); }, DT_ERR_STORE);
    server = std::make_unique<StoreServer>(addr, Auth("t"));
    c.set("k", "3"); // a fresh connection to the new server
    EXPECT_EQ(c.get("k", 100ms), "3");
}

} // namespace
} // namespace dt::bootstrap

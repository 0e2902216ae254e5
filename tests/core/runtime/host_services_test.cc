// SPDX-License-Identifier: Apache-2.0
// The store service the core lends plugins, against a real store: how long a read waits.
#include "runtime/host_services.h"

#include "bootstrap/store.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <future>

namespace dt {
namespace {

using namespace std::chrono_literals;

struct HostStore : ::testing::Test {
    bootstrap::Auth auth{std::string(64, 't')};
    bootstrap::StoreServer server{"127.0.0.1:0", auth};
    bootstrap::StoreClient store{server.address(), auth, 10000ms};
    bootstrap::StoreClient other{server.address(), auth, 10000ms};

    // The plugin's read of key with a wait of timeout_ms, in a thread of its own.
    static std::future<int32_t> read(HostBridge &bridge, std::string key, int32_t timeout_ms)
    {
        return std::async(std::launch::async, [&bridge, key, timeout_ms] {
            char buf[16];
            size_t len = 0;
            return HostBridge::services()->store_get(bridge.host(), key.c_str(), buf,
                                                     sizeof buf, &len, timeout_ms);
        });
    }
};

// A plugin that polls several keys in turn reads each with a 0 ms wait. Were that a wait
// for the key (until DISTTRAIN_TIMEOUT), it would stall on the first absent one, and its
// peers would count this rank as missing. Plain and during a transport's choice.
TEST_F(HostStore, AZeroWaitLooksOnce)
{
    for (bool choosing : {false, true}) {
        HostBridge bridge(&store, &auth, "plugin/", 10000ms);
        if (choosing) {
            bridge.abandon_key = "transport/abandoned";
            bridge.deadline = std::chrono::steady_clock::now() + 10s;
        }
        const std::string key = choosing ? "while-choosing" : "plain";
        auto looked = read(bridge, key, 0);
        // A read still waiting long after a look would have ended gets the key, so the
        // test tells by the status and never by a time.
        if (looked.wait_for(5s) != std::future_status::ready)
            other.set("plugin/" + key, "late");
        EXPECT_EQ(looked.get(), DTP_ERR_TIMEOUT) << (choosing ? "while choosing" : "plain");
    }
}

// A transport picks its network by the route towards the store's host, so the service
// gives the numeric address this process reached, not the name it was given.
TEST_F(HostStore, TheStoreAddressIsTheNumericOneThisProcessReached)
{
    std::string port = server.address().substr(server.address().rfind(':') + 1);
    bootstrap::StoreClient by_name{"localhost:" + port, auth, 10000ms};
    EXPECT_EQ(by_name.peer_address(), "127.0.0.1:" + port) << "the server listens on IPv4";
    HostBridge bridge(&by_name, &auth, "plugin/", 10000ms);
    const dt_host_services_t *s = HostBridge::services();
    ASSERT_GE(s->struct_size, offsetof(dt_host_services_t, store_address) + sizeof(void *));
    ASSERT_NE(s->store_address, nullptr);
    char buf[64];
    size_t len = 0;
    ASSERT_EQ(s->store_address(bridge.host(), buf, sizeof buf, &len), DTP_OK);
    EXPECT_EQ(std::string(buf), "127.0.0.1:" + port);
    EXPECT_EQ(len, std::string(buf).size());
    // Too small a buffer is refused, and says how long the address is.
    EXPECT_EQ(s->store_address(bridge.host(), buf, 4, &len), DTP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(len, std::string("127.0.0.1:" + port).size());
    HostBridge no_store(nullptr, &auth, "plugin/", 10000ms);
    EXPECT_EQ(s->store_address(no_store.host(), buf, sizeof buf, &len), DTP_ERR_STORE);
}

} // namespace
} // namespace dt

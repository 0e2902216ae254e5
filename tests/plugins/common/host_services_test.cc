// SPDX-License-Identifier: Apache-2.0
// The host services every transport plugin holds (plugins/common/host_services.h) over a
// fake core: store values of any length come back whole, the store's status passes
// through, log lines carry the plugin's name, and a table from an older core, shorter
// than this one, leaves the functions it lacks unset.
#include <host_services.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>

namespace {

// The core's side: a store in a map, the last log line, counted reads.
struct FakeCore {
    std::map<std::string, std::string> store;
    std::string last_log;
    std::string last_plugin;
    int reads = 0;
};

FakeCore &core(void *host) { return *static_cast<FakeCore *>(host); }

int32_t fake_set(void *host, const char *key, const void *value, size_t len)
{
    core(host).store[key].assign(static_cast<const char *>(value), len);
    return DTP_OK;
}

int32_t fake_get(void *host, const char *key, void *buf, size_t cap, size_t *len, int32_t)
{
    FakeCore &c = core(host);
    ++c.reads;
    auto it = c.store.find(key);
    if (it == c.store.end()) return DTP_ERR_TIMEOUT;
    std::memcpy(buf, it->second.data(), std::min(cap, it->second.size()));
    *len = it->second.size();
    return DTP_OK;
}

void fake_log(void *host, int, const char *plugin, const char *message)
{
    core(host).last_plugin = plugin;
    core(host).last_log = message;
}

dt_host_services_t fake_services()
{
    dt_host_services_t s{};
    s.struct_size = sizeof(s);
    s.abi_version = DT_HOST_SERVICES_VERSION;
    s.log = fake_log;
    s.store_set = fake_set;
    s.store_get = fake_get;
    return s;
}

// Opens the table to the test.
class Host : public dtp::HostServices {
public:
    using HostServices::HostServices;
    using HostServices::services;
};

TEST(HostServices, AStoreValueOfAnyLengthComesBackWhole)
{
    FakeCore c;
    dt_host_services_t s = fake_services();
    Host host("test", &c, &s);
    for (size_t size : {size_t{0}, size_t{1}, size_t{1024}, size_t{1025}, size_t{70000}}) {
        std::string value(size, '\0');
        for (size_t i = 0; i < size; ++i) value[i] = static_cast<char>('a' + i % 26);
        ASSERT_EQ(host.store_set("k", value), DTP_OK);
        c.reads = 0;
        std::string got = "stale";
        ASSERT_EQ(host.store_get("k", &got, 0), DTP_OK);
        EXPECT_EQ(got, value) << size << " bytes";
        EXPECT_EQ(c.reads, size > 1024 ? 2 : 1) << "a longer value is read again, once";
    }
}

TEST(HostServices, TheStoresStatusPassesThroughAndLeavesTheValue)
{
    FakeCore c;
    dt_host_services_t s = fake_services();
    Host host("test", &c, &s);
    std::string got = "kept";
    EXPECT_EQ(host.store_get("absent", &got, 5), DTP_ERR_TIMEOUT);
    EXPECT_EQ(got, "kept");
}

TEST(HostServices, LogLinesCarryThePluginsName)
{
    FakeCore c;
    dt_host_services_t s = fake_services();
    Host host("tcp", &c, &s);
    host.log(DT_LOG_INFO, "hello");
    EXPECT_EQ(c.last_plugin, "tcp");
    EXPECT_EQ(c.last_log, "hello");
    host.set_error("ignored: this core lends no set_error"); // must not crash
}

TEST(HostServices, AnOlderCoresShorterTableLeavesWhatItLacksUnset)
{
    FakeCore c;
    dt_host_services_t s = fake_services();
    s.auth_sign = [](void *, const void *, size_t, uint8_t *) -> int32_t { return DTP_OK; };
    s.struct_size = offsetof(dt_host_services_t, store_get) + sizeof(s.store_get);
    Host host("test", &c, &s);
    EXPECT_NE(host.services().store_get, nullptr);
    EXPECT_EQ(host.services().auth_sign, nullptr) << "beyond the core's struct_size";
    EXPECT_EQ(host.services().struct_size, s.struct_size);
}

TEST(HostServices, TheStoreAddressComesFromACoreThatOffersItAndIsEmptyOtherwise)
{
    FakeCore c;
    dt_host_services_t s = fake_services();
    s.store_address = [](void *, char *buf, size_t cap, size_t *len) -> int32_t {
        const char addr[] = "10.77.9.1:29500";
        *len = sizeof(addr) - 1;
        if (cap < sizeof(addr)) return DTP_ERR_INVALID_ARGUMENT;
        std::memcpy(buf, addr, sizeof(addr));
        return DTP_OK;
    };
    EXPECT_EQ(Host("test", &c, &s).store_address(), "10.77.9.1:29500");
    // A core from before the service: its table ends before it.
    s.struct_size = offsetof(dt_host_services_t, store_address);
    EXPECT_EQ(Host("test", &c, &s).store_address(), "");
    // A core that has not reached its store says so.
    s = fake_services();
    s.store_address = [](void *, char *, size_t, size_t *) -> int32_t { return DTP_ERR_STORE; };
    EXPECT_EQ(Host("test", &c, &s).store_address(), "");
}

TEST(HostServices, NoTableAtAllLeavesEveryFunctionUnset)
{
    Host host("test", nullptr, nullptr);
    EXPECT_EQ(host.services().log, nullptr);
    host.log(DT_LOG_INFO, "dropped"); // no log service: nothing happens
}

} // namespace

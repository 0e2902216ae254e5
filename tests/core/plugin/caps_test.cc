// SPDX-License-Identifier: Apache-2.0
// What transports accept (the version 3 capability query): old plugins are reported
// host-only with control traffic, a device-only transport is refused as the only one
// with a message that names it, and broken answers are refused as the plugin's fault.
#include "plugin/loader.h"
#include "plugin/transport_adapter.h"
#include "plugin_test_util.h"

#include <cstddef>
#include <cstring>

namespace dt::test {
namespace {

class Caps : public ::testing::Test {
protected:
    ScopedEnv path_{"DISTTRAIN_PLUGIN_PATH", fixture_dir().string()};
    dt_transport_init_args_t args_ = init_args();
};

TEST_F(Caps, OldPluginsAreHostOnlyAndCarryControl)
{
    for (const char *name : {"fixture_v1", "fixture_v2"}) {
        auto t = plugin::open_transport({name}, args_, test_services());
        EXPECT_TRUE(t->accepts(TransportMemory::host, false)) << name;
        EXPECT_TRUE(t->accepts(TransportMemory::host, true)) << name;
        EXPECT_FALSE(t->accepts(TransportMemory::device, false)) << name;
        EXPECT_FALSE(t->accepts(TransportMemory::device, true)) << name;
        EXPECT_TRUE(t->carries_control()) << name;
    }
}

TEST_F(Caps, DeviceOnlyTransportAloneIsRefusedByName)
{
    Error e = expect_error(
        [this] { plugin::open_transport({"fixture_v3_device"}, args_, test_services()); });
    EXPECT_EQ(e.status(), DT_ERR_INVALID_CONFIG);
    const std::string what = e.what();
    EXPECT_NE(what.find("transport 'fixture_v3_device' ("), std::string::npos) << what;
    EXPECT_NE(what.find("libdt-transport-fixture_v3_device.so"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot carry the engine's control traffic"), std::string::npos)
        << what;
    EXPECT_NE(what.find("only transport"), std::string::npos) << what;
}

TEST_F(Caps, DeviceOnlyTransportInAListFallsBackToAHostOne)
{
    ::testing::internal::CaptureStderr();
    auto t = plugin::open_transport({"fixture_v3_device", "fixture_v2"}, args_,
                                    test_services());
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(t->name(), "fixture_v2");
    EXPECT_NE(log.find("'fixture_v3_device' skipped"), std::string::npos) << log;
    EXPECT_NE(log.find("cannot carry the engine's control traffic"), std::string::npos) << log;
}

// An in-memory transport whose query answer a test chooses.
struct Fake {
    static inline int32_t query_status = DTP_OK;
    static inline dt_transport_caps_t answer{};
    static inline int finalized = 0;

    static dt_transport_v3_t ops()
    {
        dt_transport_v3_t t{};
        t.struct_size = sizeof(t);
        t.abi_version = DT_TRANSPORT_VERSION_3;
        t.name = "fake";
        t.finalize = [](void *) -> int32_t { return ++finalized, DTP_OK; };
        t.query = [](void *, dt_transport_caps_t *caps) -> int32_t {
            if (query_status != DTP_OK)
                return query_status;
            caps->p2p_memory = answer.p2p_memory;
            caps->native_memory = answer.native_memory;
            caps->flags = answer.flags;
            return DTP_OK;
        };
        return t;
    }
};

TEST(CapsAnswer, IsReadOnceWhenTheTransportIsMade)
{
    Fake::query_status = DTP_OK;
    Fake::answer = {};
    Fake::answer.p2p_memory = DT_TRANSPORT_MEMORY_HOST;
    Fake::answer.native_memory = DT_TRANSPORT_MEMORY_HOST | DT_TRANSPORT_MEMORY_DEVICE | 0x80;
    Fake::answer.flags = DT_TRANSPORT_CAP_CONTROL;
    static const dt_transport_v3_t ops = Fake::ops();
    int instance = 0;
    Transport t("fake", "(memory)", &ops, &instance, DT_TRANSPORT_VERSION_3);
    Fake::answer = {}; // later answers are never asked for
    EXPECT_TRUE(t.accepts(TransportMemory::device, true));
    EXPECT_FALSE(t.accepts(TransportMemory::device, false));
    EXPECT_EQ(t.caps().native_memory, DT_TRANSPORT_MEMORY_HOST | DT_TRANSPORT_MEMORY_DEVICE)
        << "bits this core does not know are dropped";
    EXPECT_TRUE(t.carries_control());
}

TEST(CapsAnswer, AFailedQueryFinalizesAndNamesTheTransport)
{
    Fake::query_status = DTP_ERR_INTERNAL;
    Fake::finalized = 0;
    static const dt_transport_v3_t ops = Fake::ops();
    int instance = 0;
    Error e = expect_error(
        [&] { Transport t("fake", "/x/libdt-transport-fake.so", &ops, &instance, 3); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_NE(std::string(e.what()).find("transport 'fake' (/x/libdt-transport-fake.so) "
                                         "failed to say what it accepts"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(Fake::finalized, 1);
    Fake::query_status = DTP_OK;
}

TEST(CapsAnswer, ControlWithoutHostPointToPointIsABrokenPlugin)
{
    Fake::query_status = DTP_OK;
    Fake::answer = {};
    Fake::answer.p2p_memory = DT_TRANSPORT_MEMORY_DEVICE;
    Fake::answer.flags = DT_TRANSPORT_CAP_CONTROL;
    Fake::finalized = 0;
    static const dt_transport_v3_t ops = Fake::ops();
    int instance = 0;
    Error e = expect_error([&] { Transport t("fake", "(memory)", &ops, &instance, 3); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_NE(std::string(e.what()).find("carries control traffic but its point-to-point "
                                         "accepts device memory, not host"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(Fake::finalized, 1);
}

TEST(CapsAnswer, HostOnlyQueryWritesOnlyWithinTheReadersStruct)
{
    // A reader that knows only the header and p2p_memory, followed by bytes of its own.
    unsigned char memory[sizeof(dt_transport_caps_t) + 8];
    std::memset(memory, 0xAB, sizeof(memory));
    const uint32_t size = offsetof(dt_transport_caps_t, native_memory);
    const uint32_t version = 3;
    std::memcpy(memory, &size, sizeof(size));
    std::memcpy(memory + sizeof(size), &version, sizeof(version));
    auto *caps = reinterpret_cast<dt_transport_caps_t *>(memory);
    ASSERT_EQ(plugin::host_only_query(nullptr, caps), DTP_OK);
    EXPECT_EQ(caps->struct_size, size);   // the reader's header is kept
    EXPECT_EQ(caps->abi_version, version);
    EXPECT_EQ(caps->p2p_memory, DT_TRANSPORT_MEMORY_HOST);
    for (size_t i = size; i < sizeof(memory); ++i)
        EXPECT_EQ(memory[i], 0xAB) << "byte " << i << " is past the reader's struct";
}

// A version 3 table with the members every version requires, each doing nothing.
dt_transport_v3_t minimal_v3_table()
{
    dt_transport_v3_t table = Fake::ops();
    table.init = [](const dt_transport_init_args_t *, void **) -> int32_t { return 0; };
    table.isend = [](void *, int32_t, uint64_t, const void *, size_t,
                     dt_transport_request_t *) -> int32_t { return 0; };
    table.irecv = [](void *, int32_t, uint64_t, void *, size_t,
                     dt_transport_request_t *) -> int32_t { return 0; };
    table.progress = [](void *, int32_t) -> int32_t { return 0; };
    return table;
}

TEST(CapsAnswer, VersionThreeTableWithoutQueryGetsTheOldAnswer)
{
    dt_transport_v3_t table = minimal_v3_table();
    table.query = nullptr;
    ASSERT_EQ(plugin::check_transport_ops(DT_TRANSPORT_VERSION_3, &table), "");
    EXPECT_EQ(plugin::upgrade_transport_ops(DT_TRANSPORT_VERSION_3, &table).query,
              plugin::host_only_query);
}

// A version 3 table as plugins built before split and batch_begin/batch_end were
// appended: struct_size ends at query, and whatever lies past it in memory is never read.
TEST(CapsAnswer, AnOlderVersionThreeTableReadsTheAppendedMembersAsNull)
{
    struct Older {
        dt_transport_v3_t table;
    } older;
    std::memset(&older, 0xAB, sizeof(older)); // garbage where the appended members lie
    older.table = Fake::ops();
    older.table.init = [](const dt_transport_init_args_t *, void **) -> int32_t { return 0; };
    older.table.isend = [](void *, int32_t, uint64_t, const void *, size_t,
                           dt_transport_request_t *) -> int32_t { return 0; };
    older.table.irecv = [](void *, int32_t, uint64_t, void *, size_t,
                           dt_transport_request_t *) -> int32_t { return 0; };
    older.table.progress = [](void *, int32_t) -> int32_t { return 0; };
    const size_t old_size = offsetof(dt_transport_v3_t, split);
    std::memset(reinterpret_cast<char *>(&older.table) + old_size, 0xAB,
                sizeof(dt_transport_v3_t) - old_size);
    older.table.struct_size = static_cast<uint32_t>(old_size);
    ASSERT_EQ(plugin::check_transport_ops(DT_TRANSPORT_VERSION_3, &older.table), "");
    dt_transport_v3_t upgraded = plugin::upgrade_transport_ops(DT_TRANSPORT_VERSION_3,
                                                               &older.table);
    EXPECT_EQ(upgraded.split, nullptr);
    EXPECT_EQ(upgraded.batch_begin, nullptr);
    EXPECT_EQ(upgraded.batch_end, nullptr);
    EXPECT_EQ(upgraded.wait_event, nullptr);
    EXPECT_NE(upgraded.query, nullptr);
}

// A version 3 table as plugins built before wait_event was appended: it ends at
// batch_end, whose value is kept, and wait_event reads as NULL (the core then waits for
// the producer on the host).
TEST(CapsAnswer, ATableEndingAtBatchEndReadsWaitEventAsNull)
{
    dt_transport_v3_t table = minimal_v3_table();
    table.batch_end = [](void *) -> int32_t { return 0; };
    table.wait_event = [](void *, const char *, void *) -> int32_t { return 0; }; // garbage
    table.struct_size = static_cast<uint32_t>(offsetof(dt_transport_v3_t, wait_event));
    ASSERT_EQ(plugin::check_transport_ops(DT_TRANSPORT_VERSION_3, &table), "");
    dt_transport_v3_t upgraded = plugin::upgrade_transport_ops(DT_TRANSPORT_VERSION_3, &table);
    EXPECT_NE(upgraded.batch_end, nullptr);
    EXPECT_EQ(upgraded.wait_event, nullptr);
}

// A version 3 table as plugins built before launch_on_stream was appended: wait_event
// is kept, and launch_on_stream reads as NULL (the core then orders every call with
// wait_event).
TEST(CapsAnswer, ATableEndingAtWaitEventReadsLaunchOnStreamAsNull)
{
    dt_transport_v3_t table = minimal_v3_table();
    table.wait_event = [](void *, const char *, void *) -> int32_t { return 0; };
    table.launch_on_stream = [](void *, const char *, void *) -> int32_t { return 0; };
    table.struct_size = static_cast<uint32_t>(offsetof(dt_transport_v3_t, launch_on_stream));
    ASSERT_EQ(plugin::check_transport_ops(DT_TRANSPORT_VERSION_3, &table), "");
    dt_transport_v3_t upgraded = plugin::upgrade_transport_ops(DT_TRANSPORT_VERSION_3, &table);
    EXPECT_NE(upgraded.wait_event, nullptr);
    EXPECT_EQ(upgraded.launch_on_stream, nullptr);
}

} // namespace
} // namespace dt::test

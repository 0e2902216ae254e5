// SPDX-License-Identifier: Apache-2.0
// The v1 adapter and table copying: a v1 plugin gets NULL native collectives and a
// working send/receive; a short table is never read past its end.
#include "plugin/loader.h"
#include "plugin/transport_adapter.h"
#include "plugin_test_util.h"

#include <dlfcn.h>

#include <cstring>
#include <vector>

namespace dt::test {
namespace {

std::unique_ptr<Transport> open(const std::string &name)
{
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", fixture_dir().string());
    auto args = init_args();
    return plugin::open_transport({name}, args, test_services());
}

// Sends a message to ourselves through the transport and returns what arrived.
std::string loopback(Transport &t, const std::string &message, size_t capacity,
                     int32_t *recv_status)
{
    const auto &ops = t.ops();
    std::vector<char> buf(capacity);
    dt_transport_request_t send{}, recv{};
    EXPECT_EQ(ops.irecv(t.instance(), 0, 42, buf.data(), buf.size(), &recv), DTP_OK);
    EXPECT_EQ(ops.isend(t.instance(), 0, 42, message.data(), message.size(), &send), DTP_OK);
    for (int i = 0; i < 100 && (send.status == DTP_INPROGRESS || recv.status == DTP_INPROGRESS);
         ++i)
        EXPECT_EQ(ops.progress(t.instance(), 10), DTP_OK);
    EXPECT_EQ(send.status, DTP_OK);
    EXPECT_EQ(send.bytes, message.size());
    *recv_status = recv.status;
    return recv.status == DTP_OK ? std::string(buf.data(), recv.bytes) : std::string();
}

TEST(AdapterV1, NativeCollectivesAndAbortAreNull)
{
    auto t = open("fixture_v1");
    EXPECT_EQ(t->name(), "fixture_v1");
    EXPECT_EQ(t->plugin_ops_version(), DT_TRANSPORT_VERSION_1);
    const auto &ops = t->ops();
    EXPECT_EQ(ops.abort, nullptr);
    EXPECT_EQ(ops.allreduce, nullptr);
    EXPECT_EQ(ops.broadcast, nullptr);
    EXPECT_EQ(ops.allgather, nullptr);
    EXPECT_EQ(ops.reduce_scatter, nullptr);
    EXPECT_EQ(ops.alltoall, nullptr);
    EXPECT_EQ(ops.barrier, nullptr);
    EXPECT_EQ(std::string(ops.name), "fixture_v1");
}

TEST(AdapterV1, SendAndReceiveWork)
{
    auto t = open("fixture_v1");
    int32_t status = 0;
    EXPECT_EQ(loopback(*t, "hello, rank 0", 64, &status), "hello, rank 0");
    EXPECT_EQ(status, DTP_OK);
    loopback(*t, std::string(100, 'x'), 10, &status);
    EXPECT_EQ(status, DTP_ERR_PROTOCOL); // too large is an error, never an overflow
    t->abort();                          // v1 has no abort: finalize, exactly once
    t->abort();
}

TEST(AdapterV2, OptionalMembersPassThrough)
{
    auto t = open("fixture_v2");
    EXPECT_EQ(t->plugin_ops_version(), DT_TRANSPORT_VERSION_2);
    const auto &ops = t->ops();
    EXPECT_EQ(ops.allreduce, nullptr);
    ASSERT_NE(ops.barrier, nullptr);
    dt_transport_request_t req{};
    ops.barrier(t->instance(), &req);
    EXPECT_EQ(req.status, DTP_OK);
    int32_t status = 0;
    EXPECT_EQ(loopback(*t, "v2", 8, &status), "v2");
    t->abort();
    dt_transport_request_t late{};
    char byte = 0;
    EXPECT_EQ(ops.isend(t->instance(), 0, 1, &byte, 1, &late), DTP_ERR_ABORTED);
}

TEST(AdapterV2, ShortTableIsNotReadPastItsEnd)
{
    // A v2 table that ends after abort, followed by bytes that are not NULL pointers.
    std::vector<unsigned char> memory(sizeof(dt_transport_v2_t) + 64, 0xAB);
    dt_transport_v2_t full{};
    full.struct_size = offsetof(dt_transport_v2_t, allreduce);
    full.abi_version = DT_TRANSPORT_VERSION_2;
    full.name = "short";
    full.init = [](const dt_transport_init_args_t *, void **) -> int32_t { return 0; };
    full.finalize = [](void *) -> int32_t { return 0; };
    full.isend = [](void *, int32_t, uint64_t, const void *, size_t,
                    dt_transport_request_t *) -> int32_t { return 0; };
    full.irecv = [](void *, int32_t, uint64_t, void *, size_t,
                    dt_transport_request_t *) -> int32_t { return 0; };
    full.progress = [](void *, int32_t) -> int32_t { return 0; };
    full.abort = [](void *) -> int32_t { return 0; };
    std::memcpy(memory.data(), &full, full.struct_size);

    EXPECT_EQ(plugin::check_transport_ops(DT_TRANSPORT_VERSION_2, memory.data()), "");
    plugin::LoadedPlugin plugin(nullptr, "(memory)", DT_PLUGIN_KIND_TRANSPORT,
                                DT_TRANSPORT_VERSION_2, "short", memory.data());
    const dt_transport_v3_t *ops = plugin::transport_ops(plugin);
    EXPECT_EQ(ops->struct_size, sizeof(dt_transport_v3_t));
    EXPECT_EQ(ops->query, plugin::host_only_query);
    EXPECT_EQ(ops->abort, full.abort);
    EXPECT_EQ(ops->allreduce, nullptr);
    EXPECT_EQ(ops->broadcast, nullptr);
    EXPECT_EQ(ops->barrier, nullptr);
}

TEST(AdapterChecks, BrokenTablesAreRefusedWithAReason)
{
    dt_transport_v1_t v1{};
    v1.struct_size = 8;
    v1.abi_version = DT_TRANSPORT_VERSION_1;
    EXPECT_NE(plugin::check_transport_ops(1, &v1).find("struct_size 8"), std::string::npos);
    v1.struct_size = sizeof(v1);
    EXPECT_NE(plugin::check_transport_ops(2, &v1).find("abi_version 1"), std::string::npos);
    EXPECT_NE(plugin::check_transport_ops(1, &v1).find("no init"), std::string::npos);
}

TEST(Lifetime, TransportKeepsItsPluginLoaded)
{
    std::string file = (fixture_dir() / "libdt-transport-fixture_v2.so").string();
    auto loaded = [&file] {
        void *h = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (h != nullptr)
            dlclose(h);
        return h != nullptr;
    };
    ASSERT_FALSE(loaded());
    auto t = open("fixture_v2");
    EXPECT_TRUE(loaded());
    int32_t status = 0;
    EXPECT_EQ(loopback(*t, "still here", 16, &status), "still here");
    t.reset();
    EXPECT_FALSE(loaded());
}

} // namespace
} // namespace dt::test

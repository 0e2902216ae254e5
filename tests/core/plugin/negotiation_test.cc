// SPDX-License-Identifier: Apache-2.0
// Negotiation against every fixture plugin: what is accepted, what is refused and with
// which status and message.
#include "plugin/loader.h"
#include "plugin/transport_adapter.h"
#include "plugin_test_util.h"

#include <fstream>

namespace dt::test {
namespace {

class Negotiation : public ::testing::Test {
protected:
    ScopedEnv path_{"DISTTRAIN_PLUGIN_PATH", fixture_dir().string()};

    static std::string file(const std::string &name)
    {
        return (fixture_dir() / ("libdt-transport-" + name + ".so")).string();
    }
    static std::string who(const std::string &name)
    {
        return "transport plugin '" + name + "' (" + file(name) + ")";
    }
};

TEST_F(Negotiation, AcceptsVersion1AndUpgradesItsTable)
{
    auto plugin = plugin::load("transport", "fixture_v1", test_services());
    EXPECT_EQ(plugin->name(), "fixture_v1");
    EXPECT_EQ(plugin->path(), file("fixture_v1"));
    EXPECT_EQ(plugin->kind(), DT_PLUGIN_KIND_TRANSPORT);
    EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_1);
    const dt_transport_v3_t *ops = plugin::transport_ops(*plugin);
    ASSERT_NE(ops, nullptr);
    EXPECT_NE(ops, plugin->ops()); // an owned, upgraded copy, never the v1 table itself
    EXPECT_EQ(ops->abi_version, DT_TRANSPORT_VERSION_3);
    EXPECT_EQ(ops->struct_size, sizeof(dt_transport_v3_t));
    EXPECT_EQ(ops->query, plugin::host_only_query); // through the v2 adapter
}

TEST_F(Negotiation, AcceptsVersion2)
{
    auto plugin = plugin::load("transport", "fixture_v2", nullptr);
    EXPECT_EQ(plugin->name(), "fixture_v2");
    EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_2);
    const dt_transport_v3_t *ops = plugin::transport_ops(*plugin);
    EXPECT_NE(ops->abort, nullptr);
    EXPECT_NE(ops->barrier, nullptr);
    EXPECT_EQ(ops->allreduce, nullptr);
    EXPECT_EQ(ops->alltoall, nullptr);
    EXPECT_EQ(ops->query, plugin::host_only_query);
}

TEST_F(Negotiation, AcceptsCurrentVersionWithItsOwnQuery)
{
    auto plugin = plugin::load("transport", "fixture_v3_device", nullptr);
    EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_3);
    const dt_transport_v3_t *ops = plugin::transport_ops(*plugin);
    ASSERT_NE(ops->query, nullptr);
    EXPECT_NE(ops->query, plugin::host_only_query);
    EXPECT_NE(ops->barrier, nullptr);
}

TEST_F(Negotiation, DeclineIsAnAbiErrorWithThePluginsReason)
{
    Error e = expect_error([] { plugin::load("transport", "fixture_decline", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_EQ(std::string(e.what()),
              who("fixture_decline") +
                  " declined: fixture_decline: no device found on this machine");
}

TEST_F(Negotiation, MissingEntryPointIsALoadError)
{
    Error e = expect_error([] { plugin::load("transport", "fixture_nosym", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_LOAD);
    EXPECT_EQ(std::string(e.what()),
              who("fixture_nosym") +
                  " has no entry point dt_plugin_negotiate: it is not a libdisttrain "
                  "plugin, or it was built without DT_PLUGIN_EXPORT");
}

TEST_F(Negotiation, WrongKindIsRefused)
{
    Error e = expect_error([] { plugin::load("transport", "fixture_wrongkind", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_EQ(std::string(e.what()),
              who("fixture_wrongkind") + " answered that it is a compute plugin, not a "
                                         "transport plugin; remove or rename the file");
}

TEST_F(Negotiation, NewerOpsVersionThanOfferedIsRefused)
{
    // fixture_future answers max_ops_version + 1, so this also pins what was offered.
    Error e = expect_error([] { plugin::load("transport", "fixture_future", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_EQ(std::string(e.what()),
              who("fixture_future") +
                  " answered transport ops version 4, newer than this libdisttrain speaks "
                  "(1 to 3); upgrade libdisttrain or install a plugin built for this "
                  "version");
}

TEST_F(Negotiation, FileThatIsNotASharedObjectIsALoadError)
{
    TempDir dir;
    std::ofstream(dir.path() / "libdt-transport-garbage.so") << "not an ELF file\n";
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", dir.str());
    Error e = expect_error([] { plugin::load("transport", "garbage", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_LOAD);
    EXPECT_NE(std::string(e.what()).find("' (" + (dir.path() / "libdt-transport-garbage.so")
                                                     .string() + ") cannot be loaded: "),
              std::string::npos)
        << e.what();
}

TEST_F(Negotiation, UnknownKindIsAUsageError)
{
    Error e = expect_error([] { plugin::load("quantum", "fixture_v2", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("unknown plugin kind 'quantum'"), std::string::npos);
}

TEST_F(Negotiation, LoadingTwiceGivesIndependentPlugins)
{
    auto a = plugin::load("transport", "fixture_v2", nullptr);
    auto b = plugin::load("transport", "fixture_v2", nullptr);
    a.reset(); // dlclose of one handle must leave the other usable
    EXPECT_EQ(plugin::transport_ops(*b)->name, std::string("fixture_v2"));
}

} // namespace
} // namespace dt::test

// SPDX-License-Identifier: Apache-2.0
// Discovery: the search path's order and contents, which file wins when a name is in
// several folders, and the not-found message.
#include "plugin/loader.h"
#include "plugin_test_util.h"

#include <algorithm>
#include <fstream>

#include <unistd.h>

namespace dt::test {
namespace {

// The folder beside the binary that holds the core: this test program, which links the
// core statically.
fs::path beside_folder()
{
    return fs::read_symlink("/proc/self/exe").parent_path();
}

TEST(Discovery, SearchPathOrderWithoutVariable)
{
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", std::nullopt);
    auto folders = plugin::search_path();
    ASSERT_EQ(folders.size(), 3u);
    EXPECT_EQ(fs::canonical(folders[0]), fs::canonical(beside_folder()));
    EXPECT_EQ(folders[1], folders[0] + "/disttrain/plugins");
    EXPECT_EQ(folders[2], DT_PLUGIN_INSTALL_DIR);
}

TEST(Discovery, VariableComesFirstWithDuplicatesRemovedAndMissingFoldersKept)
{
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH",
                   "/nonexistent/a:/nonexistent/a/:/nonexistent/b::/nonexistent//a");
    auto folders = plugin::search_path();
    ASSERT_GE(folders.size(), 5u);
    EXPECT_EQ(folders[0], "/nonexistent/a");
    EXPECT_EQ(folders[1], "/nonexistent/b");
    EXPECT_EQ(fs::canonical(folders[2]), fs::canonical(beside_folder()));
    EXPECT_EQ(folders.back(), DT_PLUGIN_INSTALL_DIR);
    for (size_t i = 0; i < folders.size(); ++i)
        for (size_t j = i + 1; j < folders.size(); ++j)
            EXPECT_NE(folders[i], folders[j]);
}

TEST(Discovery, FirstFolderOfThePathWins)
{
    TempDir first, second;
    copy_fixture("fixture_v1", first.path(), "dup");
    copy_fixture("fixture_v2", second.path(), "dup");
    {
        ScopedEnv path("DISTTRAIN_PLUGIN_PATH", first.str() + ":" + second.str());
        auto plugin = plugin::load("transport", "dup", nullptr);
        EXPECT_EQ(plugin->path(), (first.path() / "libdt-transport-dup.so").string());
        EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_1);
    }
    {
        ScopedEnv path("DISTTRAIN_PLUGIN_PATH", second.str() + ":" + first.str());
        auto plugin = plugin::load("transport", "dup", nullptr);
        EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_2);
    }
}

TEST(Discovery, PathBeatsTheFolderBesideTheLibrary)
{
    // A uniquely named copy beside this program, removed at the end of the test.
    std::string name = "beside" + std::to_string(getpid());
    struct Remove {
        fs::path file;
        ~Remove() { std::error_code ec; fs::remove(file, ec); }
    } beside{copy_fixture("fixture_v2", beside_folder(), name)};
    TempDir dir;
    copy_fixture("fixture_v1", dir.path(), name);

    {
        ScopedEnv path("DISTTRAIN_PLUGIN_PATH", dir.str());
        auto plugin = plugin::load("transport", name, nullptr);
        EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_1);
        EXPECT_EQ(plugin->path(), (dir.path() / ("libdt-transport-" + name + ".so")).string());
    }
    {
        ScopedEnv path("DISTTRAIN_PLUGIN_PATH", std::nullopt);
        auto plugin = plugin::load("transport", name, nullptr);
        EXPECT_EQ(plugin->ops_version(), DT_TRANSPORT_VERSION_2); // found beside
        EXPECT_EQ(fs::canonical(plugin->path()), fs::canonical(beside.file));
    }
}

TEST(Discovery, MissingPluginListsEveryFolderSearched)
{
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", "/nonexistent/one:/nonexistent/two");
    auto folders = plugin::search_path();
    std::string listed;
    for (const auto &f : folders)
        listed += (listed.empty() ? "" : ", ") + f;
    Error e = expect_error([] { plugin::load("transport", "foo", nullptr); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_NOT_FOUND);
    EXPECT_EQ(std::string(e.what()),
              "transport plugin 'foo' not found: looked for libdt-transport-foo.so in " +
                  listed +
                  "; set DISTTRAIN_PLUGIN_PATH to the folder that holds it or install the "
                  "libdisttrain-transport-foo package");
    EXPECT_EQ(listed.rfind("/nonexistent/one, /nonexistent/two, ", 0), 0u) << listed;
}

TEST(Discovery, AvailableListsNamesInSearchOrderOnce)
{
    TempDir first, second;
    copy_fixture("fixture_v2", first.path(), "zeta");
    copy_fixture("fixture_v2", first.path(), "alpha");
    copy_fixture("fixture_v2", second.path(), "beta");
    copy_fixture("fixture_v2", second.path(), "zeta"); // shadowed by first/
    fs::create_directory(second.path() / "libdt-transport-folder.so"); // not a file
    std::ofstream(second.path() / "libdt-compute-other.so") << "";      // other kind
    std::ofstream(second.path() / "libdt-transport-.so") << "";         // no name
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", first.str() + ":" + second.str());
    auto names = plugin::available("transport");
    // Only ours: the folder beside this program and the install folder hold none.
    std::vector<std::string> expected = {"alpha", "zeta", "beta"};
    ASSERT_GE(names.size(), expected.size());
    names.resize(expected.size());
    EXPECT_EQ(names, expected);
}

TEST(Discovery, AvailableFindsTheFixtures)
{
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", fixture_dir().string());
    auto names = plugin::available("transport");
    for (const char *fixture : {"fixture_decline", "fixture_future", "fixture_nosym",
                                "fixture_v1", "fixture_v2", "fixture_wrongkind"})
        EXPECT_NE(std::find(names.begin(), names.end(), fixture), names.end()) << fixture;
}

} // namespace
} // namespace dt::test

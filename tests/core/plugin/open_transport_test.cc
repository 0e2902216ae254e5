// SPDX-License-Identifier: Apache-2.0
// open_transport: the first transport of the list that loads, negotiates and
// initialises wins; each failure is logged; when all fail the error names each.
#include "plugin/loader.h"
#include "plugin_test_util.h"

namespace dt::test {
namespace {

size_t count(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

class OpenTransport : public ::testing::Test {
protected:
    ScopedEnv path_{"DISTTRAIN_PLUGIN_PATH", fixture_dir().string()};
    dt_transport_init_args_t args_ = init_args();
};

TEST_F(OpenTransport, FallsBackPastADeclineAndLogsIt)
{
    ::testing::internal::CaptureStderr();
    auto t = plugin::open_transport({"fixture_decline", "fixture_decline", "fixture_v2"},
                                    args_, test_services());
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(t->name(), "fixture_v2");
    EXPECT_EQ(t->plugin_ops_version(), DT_TRANSPORT_VERSION_2);
    EXPECT_NE(log.find("warn plugin: transport 'fixture_decline' skipped, trying "
                       "'fixture_v2' next: transport plugin 'fixture_decline' ("),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("declined: fixture_decline: no device found on this machine"),
              std::string::npos)
        << log;
    EXPECT_EQ(count(log, "'fixture_decline' skipped"), 1u) << "tried once: " << log;
}

TEST_F(OpenTransport, FirstThatWorksWinsEvenIfLaterOnesWork)
{
    auto t = plugin::open_transport({"fixture_v1", "fixture_v2"}, args_, test_services());
    EXPECT_EQ(t->name(), "fixture_v1");
}

TEST_F(OpenTransport, AllFailingNamesEachTransportAndReason)
{
    ::testing::internal::CaptureStderr();
    Error e = expect_error([this] {
        plugin::open_transport({"nope", "fixture_nosym", "fixture_future", "fixture_decline"},
                               args_, test_services());
    });
    std::string log = ::testing::internal::GetCapturedStderr();
    std::string what = e.what();
    // The first transport that exists explains the failure's kind best.
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_LOAD);
    EXPECT_EQ(what.rfind("no transport could be opened; tried 4 in order:\n  nope: "
                         "transport plugin 'nope' not found: looked for "
                         "libdt-transport-nope.so in " + fixture_dir().string() + ", ",
                         0),
              0u)
        << what;
    EXPECT_NE(what.find("\n  fixture_nosym: transport plugin 'fixture_nosym' ("), std::string::npos);
    EXPECT_NE(what.find("has no entry point"), std::string::npos);
    EXPECT_NE(what.find("\n  fixture_future: "), std::string::npos);
    EXPECT_NE(what.find("newer than this libdisttrain speaks"), std::string::npos);
    EXPECT_NE(what.find("\n  fixture_decline: "), std::string::npos);
    EXPECT_EQ(count(log, "warn plugin: transport '"), 3u) << log; // the last is the error
}

TEST_F(OpenTransport, OneNameRethrowsItsOwnError)
{
    Error e = expect_error(
        [this] { plugin::open_transport({"fixture_wrongkind"}, args_, test_services()); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_ABI);
    EXPECT_EQ(std::string(e.what()).rfind("transport plugin 'fixture_wrongkind' (", 0), 0u);
}

TEST_F(OpenTransport, InitFailureCarriesThePluginsMessage)
{
    args_ = init_args(2); // the loopback fixtures run only a job of size 1
    ::testing::internal::CaptureStderr();
    Error e = expect_error(
        [this] { plugin::open_transport({"fixture_v1", "fixture_v2"}, args_, test_services()); });
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(e.status(), DT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find(
                  "\n  fixture_v1: transport 'fixture_v1' (" +
                  (fixture_dir() / "libdt-transport-fixture_v1.so").string() +
                  ") failed to initialise: the fixture loopback transport runs only a job "
                  "of size 1"),
              std::string::npos)
        << e.what();
}

TEST_F(OpenTransport, AutoTriesEveryFoundTransportWithTcpLast)
{
    TempDir dir;
    copy_fixture("fixture_v2", dir.path(), "tcp");
    copy_fixture("fixture_decline", dir.path(), "aaa");
    copy_fixture("fixture_decline", dir.path(), "zzz");
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", dir.str());
    // Transports installed beside the library or in the install folder (ucx, mpi) come
    // after this folder's and before tcp; one of them may well open for a job of one.
    std::string after_zzz = "tcp";
    for (const std::string &name : plugin::available("transport"))
        if (name != "aaa" && name != "zzz" && name != "tcp") {
            after_zzz = name;
            break;
        }
    ::testing::internal::CaptureStderr();
    auto t = plugin::open_transport({"auto"}, args_, test_services());
    std::string log = ::testing::internal::GetCapturedStderr();
    if (after_zzz == "tcp") {
        EXPECT_EQ(t->path(), (dir.path() / "libdt-transport-tcp.so").string());
    }
    size_t aaa = log.find("transport 'aaa' skipped, trying 'zzz' next");
    size_t zzz = log.find("transport 'zzz' skipped, trying '" + after_zzz + "' next");
    EXPECT_NE(aaa, std::string::npos) << log;
    EXPECT_NE(zzz, std::string::npos) << log;
    EXPECT_LT(aaa, zzz);
}

TEST_F(OpenTransport, AutoWithNothingInstalledListsTheFolders)
{
    TempDir empty;
    ScopedEnv path("DISTTRAIN_PLUGIN_PATH", empty.str());
    if (!plugin::available("transport").empty())
        GTEST_SKIP() << "a transport is installed beside the tests or in the install folder";
    Error e = expect_error([this] { plugin::open_transport({"auto"}, args_, test_services()); });
    EXPECT_EQ(e.status(), DT_ERR_PLUGIN_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("no transport plugin found for 'auto': looked for "
                                         "libdt-transport-*.so in " + empty.str() + ", "),
              std::string::npos)
        << e.what();
}

} // namespace
} // namespace dt::test

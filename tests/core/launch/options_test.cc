// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dt::launch {
namespace {

Options parse(std::vector<std::string> args)
{
    auto opt = parse_options(args);
    EXPECT_TRUE(opt.has_value());
    return opt.value_or(Options{});
}

std::string error_of(std::vector<std::string> args)
{
    try {
        parse_options(args);
    } catch (const UsageError &e) {
        return e.message;
    }
    return "(no error)";
}

TEST(LaunchOptions, RankCountSpellings)
{
    for (const char *flag : {"-np", "-n", "--np"})
        EXPECT_EQ(parse({flag, "3", "prog"}).np, 3) << flag;
    EXPECT_EQ(parse({"--np=4", "prog"}).np, 4);
}

TEST(LaunchOptions, RankCountLimit)
{
    // The library refuses a job of more ranks (bootstrap::kMaxRanks): said at once, not
    // after building a million ranks' launches.
    EXPECT_EQ(parse({"-np", "1048576", "prog"}).np, 1048576);
    EXPECT_EQ(parse({"-np", "0003", "prog"}).np, 3);
    EXPECT_EQ(error_of({"-np", "1048577", "prog"}),
              "-np 1048577 is more ranks than the 1048576 a job may have");
    EXPECT_EQ(error_of({"-np", "99999999", "prog"}),
              "-np 99999999 is more ranks than the 1048576 a job may have");
    EXPECT_EQ(error_of({"-np", "1000000000", "prog"}),
              "-np 1000000000 is more ranks than the 1048576 a job may have");
    EXPECT_EQ(error_of({"-np", "123456789012345678901234567890", "prog"}),
              "-np 123456789012345678901234567890 is more ranks than the 1048576 a job may "
              "have");
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--max-np", "2000000", "prog"}),
              "--max-np 2000000 is more ranks than the 1048576 a job may have");
    EXPECT_EQ(error_of({"-np", "+3", "prog"}), "-np needs a positive number of ranks, got '+3'");
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--max-restarts", "99999999999", "prog"}),
              "--max-restarts needs a number from 0 to 2147483647, got '99999999999'");
    EXPECT_EQ(parse({"-np", "2", "--elastic", "--max-restarts", "1000000000", "prog"})
                  .max_restarts,
              1000000000);
}

TEST(LaunchOptions, CommandIsTakenVerbatim)
{
    Options o = parse({"-np", "1", "prog", "-x", "A", "--version", "-np", "9"});
    EXPECT_EQ(o.np, 1);
    EXPECT_TRUE(o.exports.empty());
    EXPECT_FALSE(o.show_version);
    EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "-x", "A", "--version", "-np", "9"}));
    EXPECT_EQ(parse({"-np", "1", "--", "-dash-prog"}).command,
              std::vector<std::string>{"-dash-prog"});
}

TEST(LaunchOptions, HelpAndVersion)
{
    EXPECT_FALSE(parse_options({"--help"}).has_value());
    EXPECT_FALSE(parse_options({"-np", "2", "-h"}).has_value());
    auto v = parse_options({"--version"});
    ASSERT_TRUE(v.has_value());
    EXPECT_TRUE(v->show_version); // no -np or command needed
    EXPECT_EQ(version_text().rfind("disttrainrun (libdisttrain) ", 0), 0u);
    EXPECT_NE(version_text().find(", API "), std::string::npos);
}

TEST(LaunchOptions, Exports)
{
    Options o = parse({"-x", "A", "-x", "B=1=2", "-x", "C=", "-np", "1", "prog"});
    ASSERT_EQ(o.exports.size(), 3u);
    EXPECT_EQ(o.exports[0].name, "A");
    EXPECT_FALSE(o.exports[0].value.has_value());
    EXPECT_EQ(o.exports[1].name, "B");
    EXPECT_EQ(o.exports[1].value, "1=2");
    EXPECT_EQ(o.exports[2].value, "");
    EXPECT_NE(error_of({"-x", "1A", "-np", "1", "p"}).find("-x needs VAR or VAR=VALUE"),
              std::string::npos);
    EXPECT_NE(error_of({"-x", "=v", "-np", "1", "p"}).find("-x needs VAR"), std::string::npos);
    EXPECT_EQ(error_of({"-x", "DISTTRAIN_RANK=3", "-np", "1", "p"}),
              "-x cannot set DISTTRAIN_RANK: disttrainrun sets it for each rank");
    EXPECT_EQ(error_of({"-np", "1", "-x"}), "-x needs a value");
}

TEST(LaunchOptions, HostfileAndSsh)
{
    Options o = parse({"-np", "2", "--hostfile", "hf", "--ssh-port", "2222", "--ssh-identity",
                       "/k", "prog"});
    EXPECT_EQ(o.hostfile, "hf");
    EXPECT_EQ(o.ssh_port, 2222);
    EXPECT_EQ(o.ssh_identity, "/k");
    EXPECT_EQ(parse({"-np", "2", "-hostfile", "h2", "prog"}).hostfile, "h2");
    EXPECT_EQ(parse({"-np", "2", "--hostfile=h3", "prog"}).hostfile, "h3");
    EXPECT_EQ(error_of({"-np", "2", "-H", "a:2", "--hostfile", "hf", "prog"}),
              "-H and --hostfile both give the hosts; use one of them");
    for (const char *port : {"0", "65536", "22x", "-1", ""})
        EXPECT_NE(error_of({"-np", "1", "--ssh-port", port, "p"})
                      .find("--ssh-port needs a port number from 1 to 65535"),
                  std::string::npos)
            << port;
    EXPECT_NE(error_of({"-np", "1", "--hostfile", "", "p"}).find("needs the path"),
              std::string::npos);
}

TEST(LaunchOptions, RankVariables)
{
    EXPECT_TRUE(is_rank_variable("DISTTRAIN_JOB_TOKEN"));
    EXPECT_TRUE(is_rank_variable("DISTTRAIN_LOCAL_SIZE"));
    EXPECT_FALSE(is_rank_variable("DISTTRAIN_LOG_LEVEL"));
}

TEST(LaunchOptions, ElasticGrowth)
{
    Options o = parse({"-np", "2", "--elastic", "--max-np", "4", "--host-discovery-script",
                       "./hosts.sh", "./train"});
    EXPECT_EQ(o.max_np, 4);
    EXPECT_EQ(o.discovery_script, "./hosts.sh");
    // Without --max-np the job runs at most -np ranks: replacements only.
    EXPECT_EQ(parse({"-np", "3", "--elastic", "./train"}).max_np, 3);
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--min-np", "2", "--max-np", "1", "x"}),
              "--max-np 1 is less than --min-np 2");
    EXPECT_EQ(error_of({"-np", "3", "--elastic", "--max-np", "2", "x"}),
              "-np 3 is more than --max-np 2; start at most --max-np ranks");
    EXPECT_EQ(error_of({"-np", "2", "--max-np", "2", "x"}),
              "--max-np is for elastic jobs: add --elastic");
    EXPECT_EQ(error_of({"-np", "2", "--host-discovery-script", "s", "x"}),
              "--host-discovery-script is for elastic jobs: add --elastic");
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--host-discovery-script", "s", "x"}),
              "--host-discovery-script needs --max-np B: the most ranks the job may grow to");
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--max-np", "2", "-H", "a:2",
                        "--host-discovery-script", "s", "x"}),
              "--host-discovery-script gives the hosts: drop -H and --hostfile");
    EXPECT_EQ(error_of({"-np", "2", "--elastic", "--max-np", "0", "x"}),
              "--max-np needs a positive number of ranks, got '0'");
}

} // namespace
} // namespace dt::launch

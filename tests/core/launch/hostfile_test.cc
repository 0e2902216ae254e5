// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_hosts.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dt::launch {
namespace {

std::string error_of(const std::string &text)
{
    try {
        parse_hostfile_text(text, "hf");
    } catch (const UsageError &e) {
        return e.message;
    }
    return "(no error)";
}

TEST(Hostfile, OpenMpiAndHorovodLines)
{
    auto hosts = parse_hostfile_text("# cluster\n"
                                     "\n"
                                     "node1 slots=4\n"
                                     "  node2:2   # Horovod form\n"
                                     "\tnode3\t slots=8 \r\n"
                                     "node4\n"
                                     "[fe80::1]:2\n"
                                     "::2 slots=3\n"
                                     "node5:1",
                                     "hf");
    ASSERT_EQ(hosts.size(), 7u);
    EXPECT_EQ(hosts[0].host, "node1");
    EXPECT_EQ(hosts[0].slots, 4);
    EXPECT_EQ(hosts[1].host, "node2");
    EXPECT_EQ(hosts[1].slots, 2);
    EXPECT_EQ(hosts[2].host, "node3");
    EXPECT_EQ(hosts[2].slots, 8);
    EXPECT_EQ(hosts[3].slots, 1);
    EXPECT_EQ(hosts[4].host, "fe80::1");
    EXPECT_EQ(hosts[4].slots, 2);
    EXPECT_EQ(hosts[5].host, "::2");
    EXPECT_EQ(hosts[5].slots, 3);
    EXPECT_EQ(hosts[6].host, "node5");
    EXPECT_EQ(format_hosts(hosts), "node1:4,node2:2,node3:8,node4:1,[fe80::1]:2,[::2]:3,node5:1");
}

TEST(Hostfile, SameListAsDashH)
{
    auto from_file = parse_hostfile_text("localhost slots=2\nnodeA:3\n", "hf");
    auto from_h = parse_hosts("localhost:2,nodeA:3");
    ASSERT_EQ(from_file.size(), from_h.size());
    for (size_t i = 0; i < from_h.size(); ++i) {
        EXPECT_EQ(from_file[i].host, from_h[i].host);
        EXPECT_EQ(from_file[i].slots, from_h[i].slots);
        EXPECT_EQ(from_file[i].local, from_h[i].local);
    }
    EXPECT_TRUE(from_file[0].local);
}

TEST(Hostfile, ErrorsNameFileAndLine)
{
    EXPECT_EQ(error_of("a slots=2\n\nb slot=2\n"),
              "hf:3: unexpected 'slot=2' after host 'b': a line is 'host slots=N' (Open "
              "MPI), 'host:N' (Horovod) or 'host' (one slot)");
    EXPECT_EQ(error_of("a slots=0\n"), "hf:1: host 'a slots=0' has a bad slot count: use "
                                       "host slots=N with N a positive integer");
    EXPECT_EQ(error_of("# x\na:x\n"), "hf:2: host 'a:x' has a bad slot count: use host:N "
                                      "with N a positive integer");
    EXPECT_EQ(error_of("a:2\nb\na slots=1\n"),
              "hf:3: host 'a' is already on line 1; give it once with the total slots");
    EXPECT_EQ(error_of("a slots=2 max_slots=4\n").rfind("hf:1: 'max_slots=4' is not supported", 0),
              0u);
    EXPECT_EQ(error_of("a:2 slots=2\n").rfind("hf:1: unexpected 'slots=2'", 0), 0u);
    EXPECT_EQ(error_of("a slots=2 slots=3\n").rfind("hf:1: unexpected 'slots=3'", 0), 0u);
    EXPECT_EQ(error_of(":2\n"), "hf:1: host ':2' has no host name");
    EXPECT_EQ(error_of("[::1\n"), "hf:1: host '[::1' has no closing ']'");
    EXPECT_EQ(error_of("# only comments\n\n"), "hostfile hf lists no hosts");
    EXPECT_EQ(error_of(""), "hostfile hf lists no hosts");
}

TEST(Hostfile, SlotCountsUpToTheRankLimit)
{
    EXPECT_EQ(parse_hostfile_text("localhost slots=1000000\n", "hf")[0].slots, 1000000);
    EXPECT_EQ(parse_hosts("a:1048576")[0].slots, 1048576);
    EXPECT_EQ(error_of("a slots=1048577\n"),
              "hf:1: host 'a slots=1048577' has more slots than the 1048576 ranks a job may "
              "have");
    EXPECT_EQ(error_of("a:99999999999999999999\n"),
              "hf:1: host 'a:99999999999999999999' has more slots than the 1048576 ranks a "
              "job may have");
}

TEST(Hostfile, HostsMustBeNamesOrAddresses)
{
    // Typos that used to reach ssh as host names.
    const std::string what = "' is not a host name or IP address (a name has letters, digits, "
                             "'-' and '.'; with its slots, host:N or [ipv6-address]:N)";
    EXPECT_EQ(error_of("localhost:1:2\n"), "hf:1: host 'localhost:1:2" + what);
    EXPECT_EQ(error_of("a:1\nslots=2\n"), "hf:2: host 'slots=2" + what);
    EXPECT_EQ(error_of("-oProxyCommand=x\n"), "hf:1: host '-oProxyCommand=x" + what);
    EXPECT_EQ(error_of("a\xc3\xa9\n"), "hf:1: host 'a\\xc3\\xa9" + what);
    EXPECT_EQ(error_of("[nope::x]:2\n"), "hf:1: host '[nope::x]:2" + what);
    try {
        parse_hosts("a:1,b:2:3");
        ADD_FAILURE() << "b:2:3 taken";
    } catch (const UsageError &e) {
        EXPECT_EQ(e.message, "-H entry 'b:2:3" + what);
    }
    // What is valid stays so: names, IPv4 and IPv6 addresses (bare, bracketed, zoned).
    auto hosts = parse_hostfile_text("node-1.cluster_a\n10.0.0.1:2\n::1\n"
                                     "[fe80::1%eth0]:2\n2001:db8::7 slots=3\nme@node2:2\n",
                                     "hf");
    ASSERT_EQ(hosts.size(), 6u);
    EXPECT_EQ(hosts[5].host, "me@node2");
    EXPECT_EQ(error_of("a@b@c\n"), "hf:1: host 'a@b@c" + what);
    EXPECT_EQ(error_of("@b\n"), "hf:1: host '@b" + what);
    EXPECT_EQ(hosts[3].host, "fe80::1%eth0");
    EXPECT_EQ(hosts[4].slots, 3);
}

TEST(Hostfile, ByteOrderMarkIsSkipped)
{
    auto hosts = parse_hostfile_text("\xEF\xBB\xBFlocalhost slots=2\nnodeA\n", "hf");
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].host, "localhost");
    EXPECT_TRUE(hosts[0].local);
    EXPECT_EQ(hosts[0].slots, 2);
    // Only at the start of the file.
    EXPECT_EQ(error_of("a\n\xEF\xBB\xBF" "b\n").rfind("hf:2: host '\\xef\\xbb\\xbfb' is not", 0),
              0u);
}

TEST(Hostfile, DirectoryIsNamed)
{
    try {
        read_hostfile("/tmp");
        ADD_FAILURE() << "a directory read as a hostfile";
    } catch (const UsageError &e) {
        EXPECT_EQ(e.message,
                  "hostfile /tmp is a directory; give the path of a file that lists the hosts");
    }
}

TEST(Hostfile, SlotCheckIsShared)
{
    Options opt;
    opt.np = 3;
    opt.hosts = "localhost:2";
    try {
        check_slots(opt, parse_hosts(opt.hosts));
        ADD_FAILURE() << "3 ranks on 2 slots";
    } catch (const UsageError &e) {
        EXPECT_EQ(e.message, "-np 3 asks for more ranks than the 2 slots in -H localhost:2; "
                             "add slots (host:N) or lower -np");
    }
    opt.np = 2;
    check_slots(opt, parse_hosts(opt.hosts));
    check_slots(opt, {}); // no hosts given: localhost with -np slots
}

TEST(Hostfile, ReadFromDisk)
{
    char path[] = "/tmp/dt_hostfile_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << "localhost slots=2\n";
    Options opt;
    opt.np = 2;
    opt.hostfile = path;
    auto placed = place_ranks(opt);
    ASSERT_EQ(placed.size(), 2u);
    EXPECT_TRUE(placed[1].local);
    EXPECT_EQ(placed[1].local_size, 2);
    opt.np = 3;
    try {
        place_ranks(opt);
        ADD_FAILURE() << "3 ranks on 2 slots";
    } catch (const UsageError &e) {
        EXPECT_NE(e.message.find("slots in hostfile " + std::string(path)), std::string::npos)
            << e.message;
    }
    std::remove(path);
    try {
        read_hostfile(path);
        ADD_FAILURE() << "missing file read";
    } catch (const UsageError &e) {
        EXPECT_EQ(e.message, "cannot read hostfile " + std::string(path) +
                                 ": No such file or directory");
    }
}

} // namespace
} // namespace dt::launch

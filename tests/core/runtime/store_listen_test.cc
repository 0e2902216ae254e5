// SPDX-License-Identifier: Apache-2.0
// Where rank 0 listens for the rendezvous store: a name that is loopback on rank 0's host
// (Debian's 127.0.1.1 entry for the host's own name) in a job that spans hosts.
#include "runtime/store_listen.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

// node0 as /etc/hosts on node0 itself has it, a name for another host, and nothing else.
std::string fake_resolve(const std::string &host)
{
    if (host == "node0")
        return "127.0.1.1";
    if (host == "node1")
        return "10.77.9.2";
    if (host == "node6")
        return "::1";
    return {};
}

StoreListen listen(const std::string &addr, bool launcher_given, int local_size, int size)
{
    return store_listen_address("DISTTRAIN_STORE_ADDR", addr, launcher_given, local_size,
                                size, fake_resolve);
}

TEST(StoreListen, ANameThatIsLoopbackHereListensEverywhereWhenTheJobSpansHosts)
{
    StoreListen l = listen("node0:29500", false, 1, 3);
    EXPECT_EQ(l.bind, "0.0.0.0:29500");
    for (const char *part : {"DISTTRAIN_STORE_ADDR='node0:29500' resolves to 127.0.1.1",
                             "the job spans hosts (this host runs 1 of its 3 ranks)",
                             "every interface at port 29500"})
        EXPECT_NE(l.why.find(part), std::string::npos) << part << " in: " << l.why;
}

TEST(StoreListen, AnIpv6LoopbackNameListensOnEveryIpv6AndIpv4Interface)
{
    EXPECT_EQ(listen("node6:29500", false, 2, 4).bind, "[::]:29500");
}

TEST(StoreListen, ALoopbackLiteralInAJobThatSpansHostsSaysWhatTheOthersNeed)
{
    StoreListen l = listen("127.0.0.1:29500", false, 1, 2);
    EXPECT_EQ(l.bind, "0.0.0.0:29500");
    EXPECT_NE(l.why.find("ranks on other hosts must be given an address of this host"),
              std::string::npos) << l.why;
}

TEST(StoreListen, AJobOnOneHostKeepsItsStoreOffTheNetwork)
{
    for (const char *addr : {"node0:29500", "127.0.0.1:29500", "localhost:29500"}) {
        StoreListen l = listen(addr, false, 3, 3);
        EXPECT_EQ(l.bind, "") << addr;
        EXPECT_EQ(l.why, "") << addr;
    }
}

TEST(StoreListen, AnAddressOfThisHostsNetworkIsBoundAsGiven)
{
    for (const char *addr : {"node1:29500", "10.77.9.1:29500", "unknown:29500"})
        EXPECT_EQ(listen(addr, false, 1, 3).bind, "") << addr;
}

TEST(StoreListen, ALaunchersAddressListensEverywhereUnlessLoopbackOnOneHost)
{
    EXPECT_EQ(listen("node1:29501", true, 3, 3).bind, "0.0.0.0:29501");
    EXPECT_EQ(listen("[fd00::1]:29501", true, 1, 2).bind, "[::]:29501");
    EXPECT_EQ(listen("127.0.0.1:29501", true, 2, 2).bind, "");
    EXPECT_EQ(listen("127.0.0.1:29501", true, 1, 2).bind, "0.0.0.0:29501");
}

TEST(StoreListen, AMalformedAddressNamesWhereItCameFrom)
{
    try {
        listen("node0", false, 1, 2);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_CONFIG);
        EXPECT_NE(std::string(e.what()).find("DISTTRAIN_STORE_ADDR='node0'"),
                  std::string::npos) << e.what();
    }
}

TEST(StoreListen, TheRealResolverFindsLocalhostOnLoopback)
{
    std::string here = first_address_of("localhost");
    EXPECT_TRUE(here == "127.0.0.1" || here == "::1") << here;
    EXPECT_EQ(first_address_of("no-such-host.invalid"), "");
}

} // namespace
} // namespace dt

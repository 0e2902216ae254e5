// SPDX-License-Identifier: Apache-2.0
// parse_host_port and HostPort::str.
#include "bootstrap/store.h"

#include "bootstrap_test_util.h"

namespace dt::bootstrap {
namespace {

using test::error_of;

TEST(HostPort, ParsesHostAndPort)
{
    HostPort hp = parse_host_port("X", "127.0.0.1:29500");
    EXPECT_EQ(hp.host, "127.0.0.1");
    EXPECT_EQ(hp.port, 29500);
    EXPECT_EQ(hp.str(), "127.0.0.1:29500");

    hp = parse_host_port("X", "node-7.cluster:0");
    EXPECT_EQ(hp.host, "node-7.cluster");
    EXPECT_EQ(hp.port, 0);

    hp = parse_host_port("X", "localhost:65535");
    EXPECT_EQ(hp.port, 65535);
}

TEST(HostPort, ParsesBracketedIpv6)
{
    HostPort hp = parse_host_port("X", "[::1]:80");
    EXPECT_EQ(hp.host, "::1");
    EXPECT_EQ(hp.port, 80);
    EXPECT_EQ(hp.str(), "[::1]:80");

    hp = parse_host_port("X", "[fe80::1:2]:1234");
    EXPECT_EQ(hp.host, "fe80::1:2");
    EXPECT_EQ(hp.str(), "[fe80::1:2]:1234");
}

TEST(HostPort, RejectsMalformedAddressesNamingTheSource)
{
    const char *bad[] = {"",          "host",       "host:",      ":80",      "[::1]",
                         "[::1]80",   "[::1:80",    "::1:80",     "h:65536",  "h:-1",
                         "h:8x",      "h:123456",   "[]:80",      "h :80",    "h:+80"};
    for (const char *addr : bad) {
        std::string msg = error_of([&] { parse_host_port("DISTTRAIN_STORE_ADDR", addr); },
                                   DT_ERR_INVALID_CONFIG);
        EXPECT_NE(msg.find("DISTTRAIN_STORE_ADDR='" + std::string(addr) + "'"),
                  std::string::npos)
            << msg;
        EXPECT_NE(msg.find("host:port"), std::string::npos) << msg;
    }
}

TEST(HostPort, ExplainsTheProblem)
{
    EXPECT_NE(error_of([] { parse_host_port("A", "h:70000"); }, DT_ERR_INVALID_CONFIG)
                  .find("out of range"),
              std::string::npos);
    EXPECT_NE(error_of([] { parse_host_port("A", "fe80::1:80"); }, DT_ERR_INVALID_CONFIG)
                  .find("without brackets"),
              std::string::npos);
    EXPECT_NE(error_of([] { parse_host_port("A", "node"); }, DT_ERR_INVALID_CONFIG)
                  .find("no port"),
              std::string::npos);
}

} // namespace
} // namespace dt::bootstrap

// SPDX-License-Identifier: Apache-2.0
// The address a tcp rank listens on when no variable names one (tcp_default_address.h):
// the route towards the rendezvous store first, then the first interface that is up with
// container bridges last. Interface lists are made up; routes are the kernel's.
#include "tcp_address.h"
#include "tcp_config.h"
#include "tcp_default_address.h"
#include "tcp_error.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace dt::tcp {
namespace {

Interface iface(const std::string &name, const std::string &ip, bool up = true) {
    Interface i;
    i.name = name;
    i.up = up;
    i.loopback = name == "lo";
    EXPECT_TRUE(parse_endpoint(ip + ":1", &i.addr)) << ip;
    reinterpret_cast<sockaddr_in *>(&i.addr.ss)->sin_port = 0;
    return i;
}

std::string ip_of(const SockAddr &a) {
    char text[INET6_ADDRSTRLEN] = "?";
    const void *src = a.ss.ss_family == AF_INET
                          ? static_cast<const void *>(
                                &reinterpret_cast<const sockaddr_in *>(&a.ss)->sin_addr)
                          : static_cast<const void *>(
                                &reinterpret_cast<const sockaddr_in6 *>(&a.ss)->sin6_addr);
    ::inet_ntop(a.ss.ss_family, src, text, sizeof(text));
    return text;
}

// A Docker host: docker0 is up and listed before the network the other hosts are on.
const std::vector<Interface> kDockerHost = {iface("lo", "127.0.0.1"),
                                            iface("docker0", "172.17.0.1"),
                                            iface("eth0", "10.77.9.2")};

TEST(TcpDefaultAddress, AContainerBridgeListedFirstIsPassedOver) {
    AddressChoice c = default_address("", kDockerHost);
    EXPECT_EQ(ip_of(c.addr), "10.77.9.2");
    EXPECT_NE(c.why.find("(eth0), past the container or VM bridges docker0 172.17.0.1"),
              std::string::npos) << c.why;
}

TEST(TcpDefaultAddress, BridgesOfEveryKindComeLast) {
    std::vector<Interface> list = {iface("lo", "127.0.0.1")};
    for (const char *name : {"docker0", "br-3f2a", "virbr0", "lxcbr0", "lxdbr0", "podman0",
                             "cni0", "veth1a2b"}) {
        EXPECT_TRUE(is_virtual_bridge(name)) << name;
        list.push_back(iface(name, "172.18.0.1"));
    }
    list.push_back(iface("ens5", "10.0.0.7"));
    EXPECT_EQ(ip_of(default_address("", list).addr), "10.0.0.7");
    for (const char *name : {"eth0", "ens5", "br0", "bond0", "ib0", "enp1s0f0"})
        EXPECT_FALSE(is_virtual_bridge(name)) << name;
}

TEST(TcpDefaultAddress, ABridgeIsUsedWhenNothingElseIsUpAndTheReasonSaysSo) {
    AddressChoice c = default_address("", {iface("lo", "127.0.0.1"),
                                           iface("eth0", "10.77.9.2", false),
                                           iface("docker0", "172.17.0.1")});
    EXPECT_EQ(ip_of(c.addr), "172.17.0.1");
    EXPECT_NE(c.why.find("docker0, a container or VM bridge, as no other is up"),
              std::string::npos) << c.why;
}

TEST(TcpDefaultAddress, OnlyLoopbackUpIsAnErrorNamingTheVariables) {
    try {
        default_address("", {iface("lo", "127.0.0.1"), iface("eth0", "10.0.0.2", false)});
        FAIL() << "no error";
    } catch (const TcpError &e) {
        EXPECT_EQ(e.status(), DTP_ERR_INVALID_CONFIG);
        EXPECT_NE(std::string(e.what()).find("DISTTRAIN_TCP_IFNAME"), std::string::npos);
    }
}

TEST(TcpDefaultAddress, AStoreOnLoopbackHereLeavesTheChoiceToTheInterfaces) {
    // Rank 0's own host may resolve the store's name to 127.0.1.1.
    AddressChoice c = default_address("127.0.1.1:29500", kDockerHost);
    EXPECT_EQ(ip_of(c.addr), "10.77.9.2");
    EXPECT_NE(c.why.find("the rendezvous store is on loopback here (127.0.1.1:29500)"),
              std::string::npos) << c.why;
}

TEST(TcpDefaultAddress, TheRouteToTheStoresHostWinsOverTheInterfaceOrder) {
    // The kernel routes an address of this host's own from that address: the store served
    // by a rank on this host. The made-up list would have given 10.77.9.2.
    const Interface *mine = first_external_interface(ipv4_interfaces());
    if (mine == nullptr) GTEST_SKIP() << "this host has no IPv4 interface up but loopback";
    std::string store = ip_of(mine->addr) + ":29500";
    AddressChoice c = default_address(store, kDockerHost);
    EXPECT_EQ(ip_of(c.addr), ip_of(mine->addr));
    EXPECT_EQ(c.why, "the address this host reaches the rendezvous store at " + store +
                         " from");
}

TEST(TcpDefaultAddress, TheRouteSourceOfLoopbackIsLoopback) {
    SockAddr to;
    ASSERT_TRUE(parse_endpoint("127.0.0.1:29500", &to));
    std::optional<SockAddr> from = route_source(to);
    ASSERT_TRUE(from.has_value());
    EXPECT_EQ(ip_of(*from), "127.0.0.1");
}

TEST(TcpDefaultAddress, AnUnreadableStoreAddressIsPassedOver) {
    AddressChoice c = default_address("node0:29500", kDockerHost);
    EXPECT_EQ(ip_of(c.addr), "10.77.9.2");
}

TEST(TcpBindAddress, TheVariablesAndOneHostComeFirst) {
    Config config;
    config.addr = "10.1.2.3";
    AddressChoice c = choose_bind_address(config, 3, 1, "10.77.9.1:29500");
    EXPECT_EQ(ip_of(c.addr), "10.1.2.3");
    EXPECT_EQ(c.why, "DISTTRAIN_TCP_ADDR");
    config.addr.clear();
    c = choose_bind_address(config, 3, 3, "10.77.9.1:29500");
    EXPECT_EQ(ip_of(c.addr), "127.0.0.1");
    EXPECT_EQ(c.why, "every rank runs on this host");
    config.ifname = "lo";
    c = choose_bind_address(config, 3, 1, "10.77.9.1:29500");
    EXPECT_EQ(ip_of(c.addr), "127.0.0.1");
    EXPECT_EQ(c.why, "the first address of DISTTRAIN_TCP_IFNAME=lo");
}

} // namespace
} // namespace dt::tcp

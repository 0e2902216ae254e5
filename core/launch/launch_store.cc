// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_store.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace dt::launch {
namespace {

bool is_loopback(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// "host", "host:port", "[v6]" or "[v6]:port".
bootstrap::HostPort parse_override(const std::string &value)
{
    bool has_port = value.front() == '['
                        ? value.find("]:") != std::string::npos
                        : value.find(':') != std::string::npos &&
                              value.find(':') == value.rfind(':');
    if (has_port)
        return bootstrap::parse_host_port("DISTTRAIN_STORE_ADDR", value);
    bootstrap::HostPort hp;
    hp.host = value.front() == '[' ? value.substr(1, value.size() - 2) : value;
    return hp;
}

} // namespace

std::optional<std::string> non_loopback_ipv4()
{
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0)
        return std::nullopt;
    std::optional<std::string> found;
    for (ifaddrs *i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        char text[INET_ADDRSTRLEN] = {};
        auto *sin = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
        if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text))
            found = text;
    }
    freeifaddrs(list);
    return found;
}

LaunchStore start_store(bool remote_ranks, const std::string &token)
{
    bootstrap::HostPort told;
    std::string bind_host = remote_ranks ? "0.0.0.0" : "127.0.0.1";
    if (auto value = env::get("DISTTRAIN_STORE_ADDR")) {
        told = parse_override(*value);
        if (is_loopback(told.host))
            bind_host = told.host == "localhost" ? "127.0.0.1" : told.host;
        else
            bind_host = "0.0.0.0";
    } else if (remote_ranks) {
        auto addr = non_loopback_ipv4();
        if (!addr)
            throw_error(DT_ERR_INVALID_CONFIG,
                        "no non-loopback IPv4 address found for remote ranks to reach the "
                        "store; set DISTTRAIN_STORE_ADDR=<address of this machine that "
                        "every host can reach>");
        told.host = *addr;
    } else {
        told.host = "127.0.0.1";
    }
    bootstrap::HostPort bind{bind_host, told.port};
    LaunchStore store;
    store.server = std::make_unique<bootstrap::StoreServer>(bind.str(), bootstrap::Auth(token));
    told.port = bootstrap::parse_host_port("store address", store.server->address()).port;
    store.address = told.str();
    return store;
}

} // namespace dt::launch

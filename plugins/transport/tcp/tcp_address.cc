// SPDX-License-Identifier: Apache-2.0
#include "tcp_address.h"

#include "tcp_default_address.h"
#include "tcp_error.h"
#include "tcp_socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace dt::tcp {
namespace {

using IfAddrs = std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)>;

IfAddrs get_ifaddrs() {
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0) {
        throw_errno(DTP_ERR_INVALID_CONFIG, "tcp: getifaddrs failed");
    }
    return IfAddrs(list, &::freeifaddrs);
}

bool is_ip(const ifaddrs *ifa) {
    return ifa->ifa_addr != nullptr &&
           (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
}

SockAddr from_ifaddr(const sockaddr *sa) {
    SockAddr a;
    a.len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&a.ss, sa, a.len);
    // The port of an interface address is meaningless; bind picks one.
    if (sa->sa_family == AF_INET) reinterpret_cast<sockaddr_in *>(&a.ss)->sin_port = 0;
    else reinterpret_cast<sockaddr_in6 *>(&a.ss)->sin6_port = 0;
    return a;
}

bool parse_ip(const std::string &text, SockAddr *out) {
    SockAddr a;
    auto *in = reinterpret_cast<sockaddr_in *>(&a.ss);
    auto *in6 = reinterpret_cast<sockaddr_in6 *>(&a.ss);
    if (::inet_pton(AF_INET, text.c_str(), &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        a.len = sizeof(sockaddr_in);
    } else if (::inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        a.len = sizeof(sockaddr_in6);
    } else {
        return false;
    }
    *out = a;
    return true;
}

SockAddr from_interface(const std::string &ifname) {
    IfAddrs list = get_ifaddrs();
    const ifaddrs *v6 = nullptr;
    bool seen = false;
    for (const ifaddrs *ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
        if (ifname != ifa->ifa_name) continue;
        seen = true;
        if (!is_ip(ifa)) continue;
        if (ifa->ifa_addr->sa_family == AF_INET) return from_ifaddr(ifa->ifa_addr);
        if (v6 == nullptr) v6 = ifa;
    }
    if (v6 != nullptr) return from_ifaddr(v6->ifa_addr);
    throw TcpError(DTP_ERR_INVALID_CONFIG,
                   "DISTTRAIN_TCP_IFNAME='" + ifname + "' " +
                       (seen ? "has no IP address" : "is not an interface of this host") +
                       "; available: " + describe_interfaces());
}

} // namespace

std::string SockAddr::str() const { return format_sockaddr(sa(), len); }

AddressChoice choose_bind_address(const Config &config, int size, int local_size,
                                  const std::string &store) {
    if (!config.addr.empty()) {
        SockAddr a;
        if (!parse_ip(config.addr, &a)) {
            throw TcpError(DTP_ERR_INVALID_CONFIG,
                           "DISTTRAIN_TCP_ADDR='" + config.addr +
                               "' is not an IPv4 or IPv6 address; set it to an address of "
                               "this host (available: " +
                               describe_interfaces() + ") or unset it");
        }
        return {a, "DISTTRAIN_TCP_ADDR"};
    }
    if (!config.ifname.empty()) {
        return {from_interface(config.ifname),
                "the first address of DISTTRAIN_TCP_IFNAME=" + config.ifname};
    }
    if (local_size == size) {
        SockAddr a;
        parse_ip("127.0.0.1", &a);
        return {a, "every rank runs on this host"};
    }
    return default_address(store);
}

bool parse_endpoint(const std::string &text, SockAddr *out) {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon + 1 >= text.size()) return false;
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    char *end = nullptr;
    unsigned long port = std::strtoul(text.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535) return false;
    SockAddr a;
    if (!parse_ip(host, &a)) return false;
    if (a.ss.ss_family == AF_INET) {
        reinterpret_cast<sockaddr_in *>(&a.ss)->sin_port = htons(static_cast<uint16_t>(port));
    } else {
        reinterpret_cast<sockaddr_in6 *>(&a.ss)->sin6_port = htons(static_cast<uint16_t>(port));
    }
    *out = a;
    return true;
}

std::string describe_interfaces() {
    ifaddrs *raw = nullptr;
    if (::getifaddrs(&raw) != 0) return "(getifaddrs failed)";
    IfAddrs list(raw, &::freeifaddrs);
    std::string out;
    for (const ifaddrs *ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
        if (!is_ip(ifa)) continue;
        char ip[INET6_ADDRSTRLEN] = "?";
        const void *src = ifa->ifa_addr->sa_family == AF_INET
                              ? static_cast<const void *>(
                                    &reinterpret_cast<sockaddr_in *>(ifa->ifa_addr)->sin_addr)
                              : static_cast<const void *>(
                                    &reinterpret_cast<sockaddr_in6 *>(ifa->ifa_addr)->sin6_addr);
        ::inet_ntop(ifa->ifa_addr->sa_family, src, ip, sizeof(ip));
        if (!out.empty()) out += ", ";
        out += std::string(ifa->ifa_name) + " " + ip;
    }
    return out.empty() ? std::string("none") : out;
}

} // namespace dt::tcp

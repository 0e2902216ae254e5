// SPDX-License-Identifier: Apache-2.0
#include "tcp_default_address.h"

#include "tcp_error.h"
#include "tcp_socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>

namespace dt::tcp {
namespace {

// Prefixes of the bridges (and their veth ends) that Docker, Podman, CNI, LXC/LXD and
// libvirt make: their addresses are private to this host. NCCL skips docker* the same way.
constexpr const char *kVirtualBridgePrefixes[] = {"docker", "br-",   "virbr",  "lxcbr",
                                                  "lxdbr",  "podman", "cni",   "veth"};

bool is_loopback(const SockAddr &a) {
    if (a.ss.ss_family == AF_INET) {
        auto *in = reinterpret_cast<const sockaddr_in *>(&a.ss);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&a.ss);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
           (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
}

// The address alone, without the port that SockAddr::str() adds.
std::string ip_text(const SockAddr &a) {
    std::string s = a.str();
    s = s.substr(0, s.rfind(':'));
    if (s.size() >= 2 && s.front() == '[') s = s.substr(1, s.size() - 2);
    return s;
}

void set_port(SockAddr *a, uint16_t port) {
    if (a->ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in *>(&a->ss)->sin_port = port;
    else reinterpret_cast<sockaddr_in6 *>(&a->ss)->sin6_port = port;
}

} // namespace

std::vector<Interface> ipv4_interfaces() {
    ifaddrs *raw = nullptr;
    if (::getifaddrs(&raw) != 0) throw_errno(DTP_ERR_INVALID_CONFIG, "tcp: getifaddrs failed");
    std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, &::freeifaddrs);
    std::vector<Interface> out;
    for (const ifaddrs *ifa = raw; ifa != nullptr; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
        Interface i;
        i.name = ifa->ifa_name;
        i.up = (ifa->ifa_flags & IFF_UP) != 0;
        i.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        i.addr.len = sizeof(sockaddr_in);
        std::memcpy(&i.addr.ss, ifa->ifa_addr, sizeof(sockaddr_in));
        set_port(&i.addr, 0);
        out.push_back(i);
    }
    return out;
}

bool is_virtual_bridge(const std::string &name) {
    for (const char *prefix : kVirtualBridgePrefixes) {
        if (name.rfind(prefix, 0) == 0) return true;
    }
    return false;
}

const Interface *first_external_interface(const std::vector<Interface> &list) {
    const Interface *bridge = nullptr;
    for (const Interface &i : list) {
        if (!i.up || i.loopback || is_loopback(i.addr)) continue;
        if (!is_virtual_bridge(i.name)) return &i;
        if (bridge == nullptr) bridge = &i;
    }
    return bridge;
}

std::optional<SockAddr> route_source(const SockAddr &to) {
    Fd s(::socket(to.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return std::nullopt;
    // Any port but 0 will do: the route does not depend on it, and a UDP connect sends
    // nothing.
    SockAddr target = to;
    set_port(&target, htons(9));
    if (::connect(s.get(), target.sa(), target.len) != 0) return std::nullopt;
    SockAddr local;
    local.len = sizeof(local.ss);
    if (::getsockname(s.get(), local.sa(), &local.len) != 0) return std::nullopt;
    set_port(&local, 0);
    return local;
}

AddressChoice default_address(const std::string &store,
                              const std::vector<Interface> &interfaces) {
    std::string store_note;
    SockAddr store_addr;
    if (!store.empty() && parse_endpoint(store, &store_addr)) {
        if (is_loopback(store_addr)) {
            store_note = "the rendezvous store is on loopback here (" + store + ")";
        } else if (std::optional<SockAddr> local = route_source(store_addr)) {
            if (!is_loopback(*local)) {
                return {*local, "the address this host reaches the rendezvous store at " +
                                    store + " from"};
            }
            store_note = "the route to the rendezvous store at " + store + " is loopback";
        } else {
            store_note = "no route to the rendezvous store at " + store;
        }
    } else {
        store_note = "the core does not say where the rendezvous store is";
    }
    const Interface *found = first_external_interface(interfaces);
    if (found == nullptr) {
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       "tcp: ranks run on several hosts but no non-loopback IPv4 interface is "
                       "up; set DISTTRAIN_TCP_IFNAME or DISTTRAIN_TCP_ADDR (available: " +
                           describe_interfaces() + ")");
    }
    std::string why = "the first IPv4 address of an interface that is up (" + found->name + ")";
    if (is_virtual_bridge(found->name)) {
        why = "the first IPv4 address of an interface that is up, " + found->name +
              ", a container or VM bridge, as no other is up";
    }
    std::string skipped;
    for (const Interface &i : interfaces) {
        if (&i == found) break;
        if (i.up && !i.loopback && is_virtual_bridge(i.name)) {
            skipped += (skipped.empty() ? "" : ", ") + i.name + " " + ip_text(i.addr);
        }
    }
    if (!skipped.empty()) why += ", past the container or VM bridges " + skipped;
    return {found->addr, why + "; " + store_note};
}

} // namespace dt::tcp

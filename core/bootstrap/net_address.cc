// SPDX-License-Identifier: Apache-2.0
// parse_host_port / HostPort::str (store.h) and the getaddrinfo helpers (net_address.h).
#include "bootstrap/net_address.h"

#include "runtime/error.h"

#include <arpa/inet.h>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

namespace dt::bootstrap {

namespace {

[[noreturn]] void bad_address(const std::string &what, const std::string &addr,
                              const std::string &why)
{
    throw_error(DT_ERR_INVALID_CONFIG, what, "='", addr, "' ", why,
                "; expected host:port or [ipv6-address]:port, e.g. 10.0.0.1:29500");
}

} // namespace

std::string HostPort::str() const
{
    if (host.find(':') != std::string::npos)
        return cat('[', host, "]:", port);
    return cat(host, ':', port);
}

HostPort parse_host_port(const std::string &what, const std::string &addr)
{
    HostPort hp;
    std::string port_text;
    if (!addr.empty() && addr.front() == '[') {
        size_t close = addr.find(']');
        if (close == std::string::npos)
            bad_address(what, addr, "has '[' without a matching ']'");
        hp.host = addr.substr(1, close - 1);
        if (close + 1 >= addr.size() || addr[close + 1] != ':')
            bad_address(what, addr, "has no port after ']'");
        port_text = addr.substr(close + 2);
    } else {
        size_t colon = addr.rfind(':');
        if (colon == std::string::npos)
            bad_address(what, addr, "has no port");
        hp.host = addr.substr(0, colon);
        if (hp.host.find(':') != std::string::npos)
            bad_address(what, addr, "looks like an IPv6 address without brackets");
        port_text = addr.substr(colon + 1);
    }
    if (hp.host.empty())
        bad_address(what, addr, "has no host");
    if (hp.host.find_first_of(" \t\r\n[]") != std::string::npos)
        bad_address(what, addr, "has a host with spaces or brackets");
    if (port_text.empty())
        bad_address(what, addr, "has no port");
    if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos)
        bad_address(what, addr, cat("has port '", port_text, "' that is not a number in [0, 65535]"));
    long port = std::stol(port_text);
    if (port > 65535)
        bad_address(what, addr, cat("has port ", port, " out of range [0, 65535]"));
    hp.port = static_cast<uint16_t>(port);
    return hp;
}

std::vector<SockAddr> resolve(const std::string &what, const HostPort &hp, bool passive)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo *list = nullptr;
    std::string service = std::to_string(hp.port);
    int rc = ::getaddrinfo(hp.host.c_str(), service.c_str(), &hints, &list);
    if (rc != 0)
        throw_error(DT_ERR_CONNECT, "cannot resolve host '", hp.host, "' of ", what, "=",
                    hp.str(), ": ", ::gai_strerror(rc),
                    "; use an IP address or a host name this machine can resolve");
    std::vector<SockAddr> out;
    for (addrinfo *ai = list; ai != nullptr; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(sockaddr_storage))
            continue;
        SockAddr a;
        std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
        a.len = ai->ai_addrlen;
        a.family = ai->ai_family;
        out.push_back(a);
    }
    ::freeaddrinfo(list);
    if (out.empty())
        throw_error(DT_ERR_CONNECT, "host '", hp.host, "' of ", what, "=", hp.str(),
                    " resolved to no TCP address");
    return out;
}

std::string format_sockaddr(const sockaddr *addr, socklen_t len)
{
    char host[NI_MAXHOST];
    char serv[NI_MAXSERV];
    if (::getnameinfo(addr, len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return "?";
    HostPort hp{host, static_cast<uint16_t>(std::atoi(serv))};
    return hp.str();
}

bool is_wildcard(const SockAddr &addr)
{
    if (addr.family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&addr.storage);
        return in->sin_addr.s_addr == htonl(INADDR_ANY);
    }
    if (addr.family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&addr.storage);
        return IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
    }
    return false;
}

namespace {

bool is_loopback_v4(const in_addr &a)
{
    return (ntohl(a.s_addr) >> 24) == 127;
}

std::string v4_text(const in_addr &a)
{
    char buf[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

} // namespace

std::string reachable_host()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') {
        addrinfo hints{};
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo *list = nullptr;
        if (::getaddrinfo(name, nullptr, &hints, &list) == 0) {
            std::string found;
            for (addrinfo *ai = list; ai != nullptr && found.empty(); ai = ai->ai_next) {
                const auto *in = reinterpret_cast<const sockaddr_in *>(ai->ai_addr);
                if (!is_loopback_v4(in->sin_addr))
                    found = v4_text(in->sin_addr);
            }
            ::freeaddrinfo(list);
            if (!found.empty())
                return found;
        }
    }
    ifaddrs *ifs = nullptr;
    std::string found = "127.0.0.1";
    if (::getifaddrs(&ifs) == 0) {
        for (ifaddrs *i = ifs; i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET)
                continue;
            if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                continue;
            const auto *in = reinterpret_cast<const sockaddr_in *>(i->ifa_addr);
            if (!is_loopback_v4(in->sin_addr)) {
                found = v4_text(in->sin_addr);
                break;
            }
        }
        ::freeifaddrs(ifs);
    }
    return found;
}

} // namespace dt::bootstrap

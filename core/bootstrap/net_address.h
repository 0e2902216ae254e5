/* SPDX-License-Identifier: Apache-2.0 */
// Turning "host:port" text into socket addresses and back (getaddrinfo), shared by the
// store server and client. parse_host_port itself is declared in store.h.
#pragma once

#include "bootstrap/store.h"

#include <string>
#include <sys/socket.h>
#include <vector>

namespace dt::bootstrap {

struct SockAddr {
    sockaddr_storage storage{};
    socklen_t len = 0;
    int family = 0;
    const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage); }
};

// Resolves hp with getaddrinfo (TCP only). passive: for bind(). Throws DT_ERR_CONNECT
// naming `what` and the host when it does not resolve.
std::vector<SockAddr> resolve(const std::string &what, const HostPort &hp, bool passive);

// "1.2.3.4:80" or "[::1]:80".
std::string format_sockaddr(const sockaddr *addr, socklen_t len);

// True for 0.0.0.0 and :: (bound to every interface).
bool is_wildcard(const SockAddr &addr);

// An address other hosts can probably reach this one at, for a server bound to every
// interface: the IPv4 address the host name resolves to when that is not loopback, else
// the first non-loopback IPv4 interface that is up, else 127.0.0.1.
std::string reachable_host();

} // namespace dt::bootstrap

/* SPDX-License-Identifier: Apache-2.0 */
// Which local address a rank listens on, and the "ip:port" text published in the store.
//
// Choice, in order:
//   1. DISTTRAIN_TCP_ADDR: that IP (it must belong to this host, bind checks);
//   2. DISTTRAIN_TCP_IFNAME: the first IPv4 address of that interface (else its IPv6);
//   3. all ranks on one host (local_size == size): 127.0.0.1, which needs no network and
//      is the fastest path the kernel has;
//   4. otherwise the address this host reaches the rendezvous store's host from, else the
//      first non-loopback IPv4 address of an interface that is up, container and VM
//      bridges last (tcp_default_address.h). Hosts with several networks whose store
//      sits on another network than the ranks' traffic should set one of the variables.
#pragma once

#include "tcp_config.h"

#include <sys/socket.h>

#include <string>

namespace dt::tcp {

struct SockAddr {
    sockaddr_storage ss{};
    socklen_t len = 0;

    const sockaddr *sa() const { return reinterpret_cast<const sockaddr *>(&ss); }
    sockaddr *sa() { return reinterpret_cast<sockaddr *>(&ss); }
    std::string str() const;
};

struct AddressChoice;

// The address to bind (port 0), and what chose it. store: the numeric "ip:port" at which
// this rank reaches the rendezvous store ("" when unknown). Throws
// TcpError(DTP_ERR_INVALID_CONFIG) with the list of this host's interfaces when the
// configured address or interface is unusable.
AddressChoice choose_bind_address(const Config &config, int size, int local_size,
                                  const std::string &store);

// Parses "ip:port" or "[ip6]:port" as published by a peer; false when malformed.
bool parse_endpoint(const std::string &text, SockAddr *out);

// "lo 127.0.0.1, eth0 192.0.2.2, ...": for error messages.
std::string describe_interfaces();

} // namespace dt::tcp

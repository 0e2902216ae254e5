/* SPDX-License-Identifier: Apache-2.0 */
// The address a rank of a job that spans hosts listens on when neither DISTTRAIN_TCP_ADDR
// nor DISTTRAIN_TCP_IFNAME names one.
//
// The first interface in getifaddrs order is often the wrong one: a host running Docker
// has docker0 (172.17.0.1, up, on every such host) ahead of eth0, and a rank that
// advertised it would be unreachable, or reach itself. So, as NCCL and Open MPI do, the
// choice follows where the other hosts are:
//   1. the local address the kernel routes towards the rendezvous store's host (a UDP
//      socket connected to it, whose name the kernel fills in; no packet is sent), when
//      the store is not on loopback here: the store's host is one every rank reaches;
//   2. otherwise the first non-loopback IPv4 address of an interface that is up, leaving
//      container and VM bridges (docker*, br-*, virbr*, ...) for last.
#pragma once

#include "tcp_address.h"

#include <optional>
#include <string>
#include <vector>

namespace dt::tcp {

struct AddressChoice {
    SockAddr addr;
    std::string why; // for the info log: what chose it
};

struct Interface {
    std::string name;
    bool up = false;
    bool loopback = false;
    SockAddr addr; // IPv4
};

// The IPv4 interface addresses of this host, in getifaddrs order.
std::vector<Interface> ipv4_interfaces();

// Whether name is one that container runtimes and hypervisors give their bridges.
bool is_virtual_bridge(const std::string &name);

// Rule 2 over a list: nullptr when no interface is up and not loopback.
const Interface *first_external_interface(const std::vector<Interface> &list);

// The local address the kernel would send from to reach `to` (port ignored); nullopt when
// it has no route there.
std::optional<SockAddr> route_source(const SockAddr &to);

// Rules 1 and 2. store: the numeric "ip:port" at which this rank reaches the rendezvous
// store, or "" when the core does not say. Throws TcpError(DTP_ERR_INVALID_CONFIG) when no
// interface but loopback is up.
AddressChoice default_address(const std::string &store,
                              const std::vector<Interface> &interfaces = ipv4_interfaces());

} // namespace dt::tcp

/* SPDX-License-Identifier: Apache-2.0 */
// Where rank 0 listens when it serves the rendezvous store, where that is not simply the
// address every rank was given.
//
// The ranks are given one name for the store (DISTTRAIN_STORE_ADDR=node0:29500), which
// each host resolves for itself. Debian's installer maps a host's own name to 127.0.1.1
// in /etc/hosts, so on rank 0's host that name can be loopback while every other host
// resolves it to rank 0's network address: a store bound exactly where the name resolves
// would refuse every rank but those of its own host. So when the job spans hosts and the
// address resolves to loopback here, rank 0 listens on every interface at its port (the
// token still guards every connection); a job on one host keeps its store off the
// network. A launcher's address (MASTER_ADDR, TF_CONFIG) gets every interface whenever
// it is not loopback, as it may name a service or alias this host cannot bind.
#pragma once

#include <functional>
#include <string>

namespace dt {

struct StoreListen {
    std::string bind; // "0.0.0.0:PORT" or "[::]:PORT"; empty: the given address itself
    std::string why;  // for the info log when bind says more than the given address; or empty
};

// The first numeric address host resolves to here, or "" when it does not resolve.
using ResolveHost = std::function<std::string(const std::string &host)>;
std::string first_address_of(const std::string &host);

// from: where addr came from (named in messages); launcher_given: a launcher's address,
// not one set by hand; local_size < size: the job spans hosts. Throws
// DT_ERR_INVALID_CONFIG naming from when addr is not host:port.
StoreListen store_listen_address(const std::string &from, const std::string &addr,
                                 bool launcher_given, int local_size, int size,
                                 const ResolveHost &resolve = first_address_of);

} // namespace dt

/* SPDX-License-Identifier: Apache-2.0 */
// The rendezvous store disttrainrun serves for its ranks, and the address they are told.
#pragma once

#include "bootstrap/store.h"

#include <memory>
#include <optional>
#include <string>

namespace dt::launch {

struct LaunchStore {
    std::unique_ptr<bootstrap::StoreServer> server;
    std::string address; // what ranks get in DISTTRAIN_STORE_ADDR
};

// Starts the store. Without remote ranks it listens on 127.0.0.1 only; with remote ranks
// on 0.0.0.0, telling ranks a non-loopback IPv4 address of this machine.
// DISTTRAIN_STORE_ADDR=host[:port] or [ipv6-address][:port] overrides the address told
// (and the port and, for a loopback host, the interface listened on). Throws dt::Error
// naming the variable when it is malformed or its port cannot be bound (then saying
// whether it came from an enclosing job), and when no usable address exists.
LaunchStore start_store(bool remote_ranks, const std::string &token);

// The first non-loopback IPv4 address of an interface that is up.
std::optional<std::string> non_loopback_ipv4();

} // namespace dt::launch

/* SPDX-License-Identifier: Apache-2.0 */
// The plugin's settings, read once from the environment at init.
//
//   DISTTRAIN_TCP_ADDR                  IP address to listen on (IPv4 or IPv6)
//   DISTTRAIN_TCP_IFNAME                interface whose first address to listen on
//   DISTTRAIN_TCP_MAX_MESSAGE           largest frame accepted, bytes (default 1 TiB)
//   DISTTRAIN_TCP_HANDSHAKE_TIMEOUT_MS  time a connection has to authenticate (5000)
//   DISTTRAIN_TCP_SOCKBUF               SO_SNDBUF/SO_RCVBUF bytes; 0 = kernel autotuning;
//                                       default: 4 MiB, or the most net.core.[rw]mem_max
//                                       allow when that is at least 1 MiB, else autotuning
//   DISTTRAIN_TCP_CONGESTION            congestion control of every data connection
//                                       (TCP_CONGESTION); "system": the host's default
//                                       everywhere; unset: reno towards loopback peers
//                                       (ranks on this host), the host's default elsewhere
#pragma once

#include <cstdint>
#include <string>

namespace dt::tcp {

struct Config {
    std::string addr;
    std::string ifname;
    uint64_t max_message = uint64_t{1} << 40;
    int handshake_timeout_ms = 5000;
    // Measured with compare_allreduce.py on loopback (2 ranks, 2 cores): an allreduce
    // slows down sharply once what one rank sends in a step no longer fits the peer's
    // receive buffer (each window update then costs a round of wake-ups), so 4 MiB
    // (the kernel doubles it) ran 4-8 MiB allreduces 1.3-2x faster than 1 MiB; fixed
    // buffers also beat autotuning, which starts small on every new connection. A
    // fixed size is capped by net.core.[rw]mem_max (often 208 KiB), below which
    // autotuning wins, so the default is 4 MiB, else the most those limits allow when
    // that is at least 1 MiB, else autotuning.
    int sockbuf = 0;
    // Empty: reno towards loopback peers, the host's default elsewhere. "system": never
    // set. Else set on every data connection.
    std::string congestion;

    // Throws TcpError(DTP_ERR_INVALID_CONFIG) naming the variable for a malformed value.
    static Config from_env();
    static constexpr int kDefaultSockbuf = 4 << 20;
    static constexpr int kMinFixedSockbuf = 1 << 20;
};

} // namespace dt::tcp

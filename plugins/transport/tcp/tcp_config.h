// The plugin's settings, read once from the environment at init.
//
//   DISTTRAIN_TCP_ADDR                  IP address to listen on (IPv4 or IPv6)
//   DISTTRAIN_TCP_IFNAME                interface whose first address to listen on
//   DISTTRAIN_TCP_MAX_MESSAGE           largest frame accepted, bytes (default 1 TiB)
//   DISTTRAIN_TCP_HANDSHAKE_TIMEOUT_MS  time a connection has to authenticate (5000)
//   DISTTRAIN_TCP_SOCKBUF               SO_SNDBUF/SO_RCVBUF bytes; 0 = kernel autotuning
#pragma once

#include <cstdint>
#include <string>

namespace dt::tcp {

struct Config {
    std::string addr;
    std::string ifname;
    uint64_t max_message = uint64_t{1} << 40;
    int handshake_timeout_ms = 5000;
    // Measured on loopback (tcp_bench): autotuning reaches higher throughput than a
    // fixed buffer capped by net.core.[rw]mem_max, so the default leaves it on.
    int sockbuf = 0;

    // Throws TcpError(DTP_ERR_INVALID_CONFIG) naming the variable for a malformed value.
    static Config from_env();
};

} // namespace dt::tcp

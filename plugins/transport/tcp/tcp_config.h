// The plugin's settings, read once from the environment at init.
//
//   DISTTRAIN_TCP_ADDR                  IP address to listen on (IPv4 or IPv6)
//   DISTTRAIN_TCP_IFNAME                interface whose first address to listen on
//   DISTTRAIN_TCP_MAX_MESSAGE           largest frame accepted, bytes (default 1 TiB)
//   DISTTRAIN_TCP_HANDSHAKE_TIMEOUT_MS  time a connection has to authenticate (5000)
//   DISTTRAIN_TCP_SOCKBUF               SO_SNDBUF/SO_RCVBUF bytes; 0 = kernel autotuning;
//                                       default: 1 MiB where net.core.[rw]mem_max allow it
#pragma once

#include <cstdint>
#include <string>

namespace dt::tcp {

struct Config {
    std::string addr;
    std::string ifname;
    uint64_t max_message = uint64_t{1} << 40;
    int handshake_timeout_ms = 5000;
    // Measured with tcp_bench on loopback (2 cores): a fixed 1 MiB buffer streams 1-64
    // MiB messages faster than the kernel's autotuning, and 4 MiB is no better. A fixed
    // size is capped by net.core.[rw]mem_max (often 208 KiB), below which autotuning
    // wins, so the default applies 1 MiB only where those limits allow it.
    int sockbuf = 0;

    // Throws TcpError(DTP_ERR_INVALID_CONFIG) naming the variable for a malformed value.
    static Config from_env();
    static constexpr int kDefaultSockbuf = 1 << 20;
};

} // namespace dt::tcp

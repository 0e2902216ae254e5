// SPDX-License-Identifier: Apache-2.0
#include "tcp_config.h"

#include "decimal.h"
#include "tcp_error.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace dt::tcp {
namespace {

std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// A decimal integer in [min, max] (digits only, as the core reads its variables), or the
// variable is unset (fallback).
uint64_t env_number(const char *name, uint64_t fallback, uint64_t min, uint64_t max) {
    std::string text = env(name);
    if (text.empty()) return fallback;
    uint64_t v = 0;
    if (!dtp::parse_decimal(text.c_str(), max, &v) || v < min) {
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       std::string(name) + "='" + text + "' is not a whole number in [" +
                           std::to_string(min) + ", " + std::to_string(max) +
                           "] written in decimal digits (no spaces, sign or suffix); fix or "
                           "unset it");
    }
    return v;
}

// The largest SO_SNDBUF/SO_RCVBUF an unprivileged socket may ask for.
uint64_t sysctl_value(const char *path) {
    std::ifstream in(path);
    uint64_t v = 0;
    return (in >> v) ? v : 0;
}

int default_sockbuf() {
    uint64_t limit = std::min(sysctl_value("/proc/sys/net/core/wmem_max"),
                              sysctl_value("/proc/sys/net/core/rmem_max"));
    if (limit < static_cast<uint64_t>(Config::kMinFixedSockbuf)) return 0;
    return static_cast<int>(std::min<uint64_t>(limit, Config::kDefaultSockbuf));
}

// A congestion control name as the kernel spells them (TCP_CA_NAME_MAX is 16 with NUL).
std::string congestion_from_env() {
    std::string name = env("DISTTRAIN_TCP_CONGESTION");
    bool ok = name.size() < 16;
    for (char c : name) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
    }
    if (!ok) {
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       "DISTTRAIN_TCP_CONGESTION='" + name +
                           "' is not a congestion control name (such as reno, cubic, bbr; see "
                           "/proc/sys/net/ipv4/tcp_available_congestion_control) nor 'system'; "
                           "fix or unset it");
    }
    return name;
}

} // namespace

Config Config::from_env() {
    Config c;
    c.addr = env("DISTTRAIN_TCP_ADDR");
    c.ifname = env("DISTTRAIN_TCP_IFNAME");
    if (!c.addr.empty() && !c.ifname.empty()) {
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       "both DISTTRAIN_TCP_ADDR='" + c.addr + "' and DISTTRAIN_TCP_IFNAME='" +
                           c.ifname + "' are set; set only one of them");
    }
    c.max_message = env_number("DISTTRAIN_TCP_MAX_MESSAGE", c.max_message, 1,
                               uint64_t{1} << 62);
    c.handshake_timeout_ms = static_cast<int>(
        env_number("DISTTRAIN_TCP_HANDSHAKE_TIMEOUT_MS", c.handshake_timeout_ms, 1, 3600000));
    c.sockbuf = env("DISTTRAIN_TCP_SOCKBUF").empty()
                    ? default_sockbuf()
                    : static_cast<int>(env_number("DISTTRAIN_TCP_SOCKBUF", 0, 0, 1 << 30));
    c.congestion = congestion_from_env();
    return c;
}

} // namespace dt::tcp

#include "tcp_config.h"

#include "tcp_error.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace dt::tcp {
namespace {

std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// A positive decimal integer no larger than max, or the variable is unset (fallback).
uint64_t env_number(const char *name, uint64_t fallback, uint64_t min, uint64_t max) {
    std::string text = env(name);
    if (text.empty()) return fallback;
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0' || text[0] == '-' || v < min ||
        v > max) {
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       std::string(name) + "='" + text + "' is not a whole number in [" +
                           std::to_string(min) + ", " + std::to_string(max) +
                           "]; fix or unset it");
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
    return limit >= static_cast<uint64_t>(Config::kDefaultSockbuf) ? Config::kDefaultSockbuf : 0;
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
    return c;
}

} // namespace dt::tcp

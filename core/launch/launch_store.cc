// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_store.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace dt::launch {
namespace {

bool is_loopback(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

[[noreturn]] void bad_override(const std::string &value, const std::string &why)
{
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_STORE_ADDR='", value, "' ", why,
                "; expected host, host:port, [ipv6-address] or [ipv6-address]:port, e.g. "
                "10.0.0.1:29500");
}

// "host", "host:port", "[v6]" or "[v6]:port"; a bare IPv6 address ("::1") has no port.
// Without a port, the store listens on any free one.
bootstrap::HostPort parse_override(const std::string &value)
{
    bootstrap::HostPort hp;
    if (value.front() == '[') {
        size_t close = value.find(']');
        if (close == std::string::npos)
            bad_override(value, "has '[' without a matching ']'");
        if (close + 1 < value.size()) // "[v6]:port", or junk after ']'
            return bootstrap::parse_host_port("DISTTRAIN_STORE_ADDR", value);
        hp.host = value.substr(1, close - 1);
    } else if (value.find(':') != std::string::npos && value.find(':') == value.rfind(':')) {
        return bootstrap::parse_host_port("DISTTRAIN_STORE_ADDR", value);
    } else {
        hp.host = value;
    }
    if (hp.host.empty())
        bad_override(value, "has no host");
    if (hp.host.find_first_of(" \t\r\n[]") != std::string::npos)
        bad_override(value, "has a host with spaces or brackets");
    return hp;
}

// A rank variable of an enclosing job, when DISTTRAIN_STORE_ADDR probably came with it:
// a launcher started by a rank of another disttrainrun job inherits both. Else null.
const char *enclosing_job_variable()
{
    for (const char *name : {"DISTTRAIN_RANK", "DISTTRAIN_JOB_TOKEN"})
        if (env::get(name))
            return name;
    return nullptr;
}

} // namespace

std::optional<std::string> non_loopback_ipv4()
{
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0)
        return std::nullopt;
    std::optional<std::string> found;
    for (ifaddrs *i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        char text[INET_ADDRSTRLEN] = {};
        auto *sin = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
        if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text))
            found = text;
    }
    freeifaddrs(list);
    return found;
}

LaunchStore start_store(bool remote_ranks, const std::string &token)
{
    bootstrap::HostPort told;
    std::string bind_host = remote_ranks ? "0.0.0.0" : "127.0.0.1";
    std::optional<std::string> value = env::get("DISTTRAIN_STORE_ADDR");
    if (value) {
        told = parse_override(*value);
        if (is_loopback(told.host))
            bind_host = told.host == "localhost" ? "127.0.0.1" : told.host;
        else
            bind_host = "0.0.0.0";
    } else if (remote_ranks) {
        auto addr = non_loopback_ipv4();
        if (!addr)
            throw_error(DT_ERR_INVALID_CONFIG,
                        "no non-loopback IPv4 address found for remote ranks to reach the "
                        "store; set DISTTRAIN_STORE_ADDR=<address of this machine that "
                        "every host can reach>");
        told.host = *addr;
    } else {
        told.host = "127.0.0.1";
    }
    bootstrap::HostPort bind{bind_host, told.port};
    LaunchStore store;
    try {
        store.server =
            std::make_unique<bootstrap::StoreServer>(bind.str(), bootstrap::Auth(token));
    } catch (const Error &e) {
        if (!value)
            throw;
        // Most often a launcher started by a rank of another job, which inherited that
        // job's store address, in use by that job's store.
        std::string what = e.what();
        what = what.substr(0, what.find("; choose a free port"));
        const char *enclosing = enclosing_job_variable();
        std::string from =
            enclosing ? std::string(", inherited from an enclosing disttrainrun job (") +
                            enclosing + " is set too)"
                      : std::string();
        throw_error(e.status(), what, "; this address comes from DISTTRAIN_STORE_ADDR=",
                    *value, from,
                    ": unset it (env -u DISTTRAIN_STORE_ADDR disttrainrun ...) to let "
                    "disttrainrun choose a free port, or set it to a free address");
    }
    told.port = bootstrap::parse_host_port("store address", store.server->address()).port;
    store.address = told.str();
    return store;
}

} // namespace dt::launch

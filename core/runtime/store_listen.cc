// SPDX-License-Identifier: Apache-2.0
#include "runtime/store_listen.h"

#include "bootstrap/net_address.h"
#include "bootstrap/store.h"
#include "runtime/error.h"

#include <netdb.h>

namespace dt {

namespace {

bool is_loopback(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 ||
           host.rfind("::ffff:127.", 0) == 0;
}

std::string every_interface(const std::string &like, uint16_t port)
{
    return cat(like.find(':') != std::string::npos ? "[::]" : "0.0.0.0", ":", port);
}

} // namespace

std::string first_address_of(const std::string &host)
{
    try {
        auto found = bootstrap::resolve("the store address", bootstrap::HostPort{host, 1}, false);
        char text[NI_MAXHOST];
        if (::getnameinfo(found.front().get(), found.front().len, text, sizeof text, nullptr,
                          0, NI_NUMERICHOST) != 0)
            return {};
        return text;
    } catch (const Error &) {
        return {}; // the server's own bind names the host that does not resolve
    }
}

StoreListen store_listen_address(const std::string &from, const std::string &addr,
                                 bool launcher_given, int local_size, int size,
                                 const ResolveHost &resolve)
{
    bootstrap::HostPort hp = bootstrap::parse_host_port(from, addr);
    if (launcher_given && !is_loopback(hp.host))
        return {every_interface(hp.host, hp.port), ""};
    if (local_size >= size)
        return {}; // one host: the store stays off the network
    bool literal = is_loopback(hp.host); // a launcher's address always is, by now
    std::string here = literal ? hp.host : resolve(hp.host);
    if (here.empty() || !is_loopback(here))
        return {};
    std::string spans = cat("the job spans hosts (this host runs ", local_size, " of its ",
                            size, " ranks)");
    std::string listen = cat("rank 0 serves the store on every interface at port ", hp.port);
    if (literal)
        return {every_interface(here, hp.port),
                cat(from, "='", addr, "' is a loopback address, but ", spans, ": ", listen,
                    "; ranks on other hosts must be given an address of this host that "
                    "they can reach")};
    return {every_interface(here, hp.port),
            cat(from, "='", addr, "' resolves to ", here, " on this host, a loopback "
                "address (as /etc/hosts often maps a host's own name), but ", spans, ": ",
                listen, " so that the other hosts can reach it")};
}

} // namespace dt

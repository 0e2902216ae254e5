#include "launch/launch_hosts.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <map>

namespace dt::launch {
namespace {

std::string local_hostname()
{
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        return {};
    return name;
}

int parse_slots(const std::string &entry, const std::string &value)
{
    bool digits = !value.empty() && value.size() <= 6 &&
                  value.find_first_not_of("0123456789") == std::string::npos;
    int n = digits ? std::atoi(value.c_str()) : 0;
    if (n <= 0)
        throw UsageError{"-H entry '" + entry +
                         "' has a bad slot count: use host:N with N a positive integer"};
    return n;
}

} // namespace

bool is_local_host(const std::string &name)
{
    if (name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0)
        return true;
    std::string self = local_hostname();
    if (self.empty())
        return false;
    // "node1" and "node1.cluster" name the same machine when either is our name.
    auto short_name = [](const std::string &h) { return h.substr(0, h.find('.')); };
    return name == self || name == short_name(self) ||
           (name.find('.') != std::string::npos && self.find('.') == std::string::npos &&
            short_name(name) == self);
}

std::vector<HostSlots> parse_hosts(const std::string &list)
{
    std::vector<HostSlots> hosts;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        std::string entry = list.substr(start, comma == std::string::npos ? std::string::npos
                                                                          : comma - start);
        start = comma == std::string::npos ? list.size() + 1 : comma + 1;
        if (entry.empty())
            throw UsageError{"-H '" + list + "' has an empty entry; use host:N,host:N"};
        HostSlots h;
        // The slot count follows the last ':' unless that ':' is inside an IPv6 address
        // ("::1" alone, or "[::1]:2").
        size_t colon = entry.rfind(':');
        bool bracketed = entry.front() == '[';
        if (bracketed) {
            size_t close = entry.find(']');
            if (close == std::string::npos)
                throw UsageError{"-H entry '" + entry + "' has no closing ']'"};
            h.host = entry.substr(1, close - 1);
            if (close + 1 < entry.size()) {
                if (entry[close + 1] != ':')
                    throw UsageError{"-H entry '" + entry + "' is malformed; use [addr]:N"};
                h.slots = parse_slots(entry, entry.substr(close + 2));
            }
        } else if (colon != std::string::npos && entry.find(':') == colon) {
            h.host = entry.substr(0, colon);
            h.slots = parse_slots(entry, entry.substr(colon + 1));
        } else if (colon != std::string::npos) {
            h.host = entry; // a bare IPv6 address: one slot
        } else {
            h.host = entry;
        }
        if (h.host.empty())
            throw UsageError{"-H entry '" + entry + "' has no host name"};
        for (const HostSlots &seen : hosts)
            if (seen.host == h.host)
                throw UsageError{"-H lists host '" + h.host +
                                 "' twice; give it once with the total slots"};
        h.local = is_local_host(h.host);
        hosts.push_back(h);
    }
    return hosts;
}

std::vector<Placement> place_ranks(const Options &opt)
{
    std::vector<HostSlots> hosts =
        opt.hosts.empty() ? std::vector<HostSlots>{{"localhost", opt.np, true}}
                          : parse_hosts(opt.hosts);
    long total = 0;
    for (const HostSlots &h : hosts)
        total += h.slots;
    if (opt.np > total)
        throw UsageError{"-np " + std::to_string(opt.np) + " asks for more ranks than the " +
                         std::to_string(total) + " slots in -H " + opt.hosts +
                         "; add slots (host:N) or lower -np"};

    std::vector<Placement> ranks;
    // Ranks on aliases of this machine (localhost, 127.0.0.1, our name) share local ranks.
    auto machine = [](const HostSlots &h) { return h.local ? std::string() : h.host; };
    std::map<std::string, int> per_host;
    std::vector<std::string> machine_of;
    for (const HostSlots &h : hosts) {
        if (opt.launcher == LauncherKind::local && !h.local)
            throw UsageError{"--launcher local cannot start ranks on remote host '" +
                             h.host + "'; drop it from -H or use --launcher ssh"};
        for (int s = 0; s < h.slots && static_cast<int>(ranks.size()) < opt.np; ++s) {
            Placement p;
            p.rank = static_cast<int>(ranks.size());
            p.host = h.host;
            p.local = h.local && opt.launcher != LauncherKind::ssh;
            p.local_rank = per_host[machine(h)]++;
            ranks.push_back(p);
            machine_of.push_back(machine(h));
        }
    }
    for (Placement &p : ranks)
        p.local_size = per_host[machine_of[static_cast<size_t>(p.rank)]];
    return ranks;
}

} // namespace dt::launch

// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_hosts.h"

#include "bootstrap/rank_discovery.h"
#include "launch/launch_text.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace dt::launch {
namespace {

std::string local_hostname()
{
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        return {};
    return name;
}

int parse_slots(const std::string &context, const std::string &entry,
                const std::string &value, const char *form = "host:N")
{
    bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    size_t first = digits ? std::min(value.find_first_not_of('0'), value.size()) : 0;
    if (digits && (value.size() - first > 9 || std::atol(value.c_str()) > bootstrap::kMaxRanks))
        throw UsageError{context + " '" + visible(entry) + "' has more slots than the " +
                         std::to_string(bootstrap::kMaxRanks) + " ranks a job may have"};
    int n = digits ? std::atoi(value.c_str()) : 0;
    if (n <= 0)
        throw UsageError{context + " '" + visible(entry) + "' has a bad slot count: use " +
                         form + " with N a positive integer"};
    return n;
}

// A host name (letters, digits, '-', '_' and '.', not starting with '-' or '.', which
// ssh would take for an option), an IPv4 address, or an IPv6 address (with an optional
// %zone); a name may come after a user name (user@node, as ssh takes it). Anything else
// is a typo ("host:1:2", "slots=2", a byte-order mark...) that would otherwise reach ssh
// as a host name.
bool valid_host(const std::string &host)
{
    size_t at = host.find('@');
    if (at != std::string::npos && host.find(':') == std::string::npos) {
        std::string user = host.substr(0, at);
        return !user.empty() && user.front() != '-' &&
               std::all_of(user.begin(), user.end(), [](unsigned char c) {
                   return std::isalnum(c) || c == '-' || c == '_' || c == '.';
               }) &&
               host.find('@', at + 1) == std::string::npos && valid_host(host.substr(at + 1));
    }
    if (host.find(':') != std::string::npos) {
        std::string addr = host.substr(0, host.find('%'));
        std::string zone = host.find('%') == std::string::npos ? "x" : host.substr(addr.size() + 1);
        in6_addr a{};
        return inet_pton(AF_INET6, addr.c_str(), &a) == 1 && !zone.empty() &&
               std::all_of(zone.begin(), zone.end(), [](unsigned char c) {
                   return std::isalnum(c) || c == '_' || c == '-' || c == '.';
               });
    }
    if (host.size() > 253 || host.front() == '-' || host.front() == '.')
        return false;
    return std::all_of(host.begin(), host.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_' || c == '.';
    });
}

// One "host", "host:N" or "[v6addr]:N"; context starts the error messages ("-H entry").
HostSlots parse_entry(const std::string &context, const std::string &entry)
{
    HostSlots h;
    // The slot count follows the last ':' unless that ':' is inside an IPv6 address
    // ("::1" alone, or "[::1]:2").
    size_t colon = entry.rfind(':');
    bool bracketed = entry.front() == '[';
    if (bracketed) {
        size_t close = entry.find(']');
        if (close == std::string::npos)
            throw UsageError{context + " '" + entry + "' has no closing ']'"};
        h.host = entry.substr(1, close - 1);
        if (close + 1 < entry.size()) {
            if (entry[close + 1] != ':')
                throw UsageError{context + " '" + entry + "' is malformed; use [addr]:N"};
            h.slots = parse_slots(context, entry, entry.substr(close + 2));
        }
    } else if (colon != std::string::npos && entry.find(':') == colon) {
        h.host = entry.substr(0, colon);
        h.slots = parse_slots(context, entry, entry.substr(colon + 1));
    } else {
        h.host = entry; // a name, or a bare IPv6 address: one slot
    }
    if (h.host.empty())
        throw UsageError{context + " '" + visible(entry) + "' has no host name"};
    if (!valid_host(h.host))
        throw UsageError{context + " '" + visible(entry) + "' is not a host name or IP " +
                         "address (a name has letters, digits, '-' and '.'; with its slots, " +
                         "host:N or [ipv6-address]:N)"};
    h.local = is_local_host(h.host);
    return h;
}

std::vector<std::string> words(const std::string &line)
{
    std::vector<std::string> out;
    size_t i = 0;
    while (i < line.size()) {
        i = line.find_first_not_of(" \t\r", i);
        if (i == std::string::npos)
            break;
        size_t end = line.find_first_of(" \t\r", i);
        out.push_back(line.substr(i, end == std::string::npos ? std::string::npos : end - i));
        i = end == std::string::npos ? line.size() : end;
    }
    return out;
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
        HostSlots h = parse_entry("-H entry", entry);
        for (const HostSlots &seen : hosts)
            if (seen.host == h.host)
                throw UsageError{"-H lists host '" + h.host +
                                 "' twice; give it once with the total slots"};
        hosts.push_back(h);
    }
    return hosts;
}

std::vector<HostSlots> parse_hostfile_text(const std::string &text, const std::string &path)
{
    std::vector<HostSlots> hosts;
    std::vector<int> line_of; // where each host was given
    // A UTF-8 byte-order mark, as some Windows editors write, is not part of the first host.
    size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    for (int number = 1; start < text.size(); ++number) {
        size_t nl = text.find('\n', start);
        std::string line =
            text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        start = nl == std::string::npos ? text.size() : nl + 1;
        std::string where = path + ":" + std::to_string(number) + ":";
        std::vector<std::string> w = words(line.substr(0, line.find('#')));
        if (w.empty())
            continue;
        std::string entry = w[0];
        for (size_t i = 1; i < w.size(); ++i)
            entry += " " + w[i];
        HostSlots h = parse_entry(where + " host", w[0]);
        bool colon_slots = w[0].front() == '['
                               ? w[0].find("]:") != std::string::npos
                               : std::count(w[0].begin(), w[0].end(), ':') == 1;
        for (size_t i = 1; i < w.size(); ++i) {
            const std::string &word = w[i];
            if (word.rfind("slots=", 0) == 0 && !colon_slots && i == 1) {
                h.slots = parse_slots(where + " host", entry, word.substr(6), "host slots=N");
            } else if (word.rfind("max_slots=", 0) == 0 || word.rfind("max-slots=", 0) == 0) {
                throw UsageError{where + " '" + word +
                                 "' is not supported: disttrainrun never places more ranks "
                                 "on a host than its slots=N"};
            } else {
                throw UsageError{where + " unexpected '" + word + "' after host '" + w[0] +
                                 "': a line is 'host slots=N' (Open MPI), 'host:N' "
                                 "(Horovod) or 'host' (one slot)"};
            }
        }
        for (size_t k = 0; k < hosts.size(); ++k)
            if (hosts[k].host == h.host)
                throw UsageError{where + " host '" + h.host + "' is already on line " +
                                 std::to_string(line_of[k]) +
                                 "; give it once with the total slots"};
        hosts.push_back(h);
        line_of.push_back(number);
    }
    if (hosts.empty())
        throw UsageError{"hostfile " + path + " lists no hosts"};
    return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string &path)
{
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw UsageError{"hostfile " + path + " is a directory; give the path of a file that "
                         "lists the hosts"};
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError{"cannot read hostfile " + path + ": " + std::strerror(errno)};
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        throw UsageError{"cannot read hostfile " + path + ": " + std::strerror(errno)};
    return parse_hostfile_text(text.str(), path);
}

std::string format_hosts(const std::vector<HostSlots> &hosts)
{
    std::string out;
    for (const HostSlots &h : hosts) {
        if (!out.empty())
            out += ',';
        bool v6 = h.host.find(':') != std::string::npos;
        if (v6)
            out += '[';
        out += h.host;
        if (v6)
            out += ']';
        out += ':';
        out += std::to_string(h.slots);
    }
    return out;
}

std::vector<HostSlots> host_list(const Options &opt)
{
    if (!opt.hostfile.empty())
        return read_hostfile(opt.hostfile);
    if (!opt.hosts.empty())
        return parse_hosts(opt.hosts);
    return {};
}

void check_slots(const Options &opt, const std::vector<HostSlots> &hosts)
{
    if (hosts.empty())
        return;
    long total = 0;
    for (const HostSlots &h : hosts)
        total += h.slots;
    if (opt.np > total)
        throw UsageError{"-np " + std::to_string(opt.np) + " asks for more ranks than the " +
                         std::to_string(total) + " slots in " +
                         (opt.hostfile.empty() ? "-H " + opt.hosts : "hostfile " + opt.hostfile) +
                         "; add slots (host:N) or lower -np"};
}

std::vector<Placement> place_ranks(const Options &opt)
{
    std::vector<HostSlots> hosts = host_list(opt);
    if (hosts.empty())
        hosts.push_back({"localhost", opt.np, true});
    check_slots(opt, hosts);

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

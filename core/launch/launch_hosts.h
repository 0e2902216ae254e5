/* SPDX-License-Identifier: Apache-2.0 */
// The -H host list and the placement of ranks on it: ranks fill each host's slots in
// the order the hosts are given (rank 0 on the first host).
#pragma once

#include "launch/launch_options.h"

#include <string>
#include <vector>

namespace dt::launch {

struct HostSlots {
    std::string host;
    int slots = 1;
    bool local = false; // this machine: localhost, 127.x, ::1 or our host name
};

// Parses "h1:4,h2,h3:2" ("host" alone means one slot). Throws UsageError for an empty
// name, one that is not a host name or IP address, a slot count that is not a positive
// integer (at most bootstrap::kMaxRanks), or a host listed twice.
std::vector<HostSlots> parse_hosts(const std::string &list);

// Parses a hostfile's text, one host a line: "host slots=N" (Open MPI), "host:N"
// (Horovod) or "host" (one slot); '#' starts a comment; blank lines are skipped; a UTF-8
// byte-order mark at the start is skipped. Throws UsageError naming path:line for
// anything else, a host given twice, or no host at all.
std::vector<HostSlots> parse_hostfile_text(const std::string &text, const std::string &path);

// Reads and parses the hostfile at path; UsageError also when it cannot be read.
std::vector<HostSlots> read_hostfile(const std::string &path);

// The -H form of hosts: "node1:4,[fe80::1]:2".
std::string format_hosts(const std::vector<HostSlots> &hosts);

// The hosts of --hostfile or -H; empty when neither was given.
std::vector<HostSlots> host_list(const Options &opt);

// Throws UsageError when opt.np is more than the slots of hosts (none: any number).
void check_slots(const Options &opt, const std::vector<HostSlots> &hosts);

// True when name is this machine.
bool is_local_host(const std::string &name);

struct Placement {
    int rank = 0;
    std::string host;
    bool local = false;   // started here with fork/exec (false: through ssh)
    int local_rank = 0;   // index among the ranks on the same host
    int local_size = 0;   // ranks on the same host
    // Elastic: how death notices name the process (DISTTRAIN_LAUNCH_ID); -1: its rank.
    // A replacement, which takes its dead rank's placement, gets a new one.
    int launch_id = -1;
};

// Places opt.np ranks on the hosts (localhost:np without -H or --hostfile). Throws UsageError when -np
// exceeds the slots, or when --launcher local meets a remote host. With --launcher ssh
// every rank is started through ssh, local hosts included.
std::vector<Placement> place_ranks(const Options &opt);

} // namespace dt::launch

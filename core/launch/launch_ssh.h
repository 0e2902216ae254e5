/* SPDX-License-Identifier: Apache-2.0 */
// Starting ranks on other hosts through ssh: the reachability check run before anything
// starts, and the remote command line.
#pragma once

#include "launch/launch_process.h"

#include <string>
#include <utility>
#include <vector>

namespace dt::launch {

// Quotes s for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string &s);

// How ssh reaches the hosts: --ssh-port (ssh -p) and --ssh-identity (ssh -i).
struct SshOptions {
    int port = 0;          // 0: ssh's own default (22, or the user's ssh_config)
    std::string identity;  // empty: ssh's default keys
};

// The ssh options before the host: BatchMode (never prompt), then -p and -i when set.
std::vector<std::string> ssh_options(const SshOptions &ssh);

struct UnreachableHost {
    std::string host;
    std::string reason; // ssh's stderr on one line, or how ssh ended
};

// Runs `ssh -o BatchMode=yes [-p N] [-i FILE] -o ConnectTimeout=5 host true` for every
// host at once and returns those that failed, in the order given. ssh_path: resolved ssh
// executable.
std::vector<UnreachableHost> check_hosts(const std::string &ssh_path, const SshOptions &ssh,
                                         const std::vector<std::string> &hosts);

// The one-line error for an unreachable host, with the command to try by hand.
std::string unreachable_message(const UnreachableHost &u, const SshOptions &ssh);

// The ssh invocation that runs command on host in directory cwd with env set. The job
// token is not on the command line (where ps would show it on both machines): the remote
// side reads it as the first line of its stdin, so the caller writes token + "\n" to the
// child's stdin pipe and keeps the pipe open. When ssh dies (the launcher stops the rank)
// the remote stdin closes and the remote wrapper sends SIGTERM to the rank.
SpawnSpec remote_spawn_spec(const std::string &ssh_path, const SshOptions &ssh,
                            const std::string &host,
                            const std::string &cwd,
                            const std::vector<std::pair<std::string, std::string>> &env,
                            const std::vector<std::string> &command);

} // namespace dt::launch

/* SPDX-License-Identifier: Apache-2.0 */
// --host-discovery-script: running the user's script, which prints the hosts that may run
// ranks ("host:slots" a line, as Horovod's), without ever blocking the launcher: each run
// is a child whose output is read from the job's poll loop, killed past its time limit.
#pragma once

#include "launch/launch_hosts.h"
#include "launch/launch_process.h"

#include <poll.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dt::launch {

// What one run of the script gave: the hosts, or why it failed (with its stderr).
struct DiscoveryResult {
    bool ok = false;
    std::vector<HostSlots> hosts;
    std::string error; // "exited with code 3: <stderr>", "took more than 5 s", ...
};

// Parses the script's stdout: hostfile lines ("host:N", "host slots=N", "host"); no line
// at all means no host. Throws UsageError naming the bad line.
std::vector<HostSlots> parse_discovery_output(const std::string &text);

class HostDiscovery {
public:
    using Clock = std::chrono::steady_clock;

    HostDiscovery(std::string script, Clock::duration interval, Clock::duration limit);
    ~HostDiscovery();
    HostDiscovery(const HostDiscovery &) = delete;
    HostDiscovery &operator=(const HostDiscovery &) = delete;

    // The script's pipes while a run is under way, for the caller's poll.
    void add_fds(std::vector<pollfd> &fds) const;
    // After each wakeup: reads what is ready, reaps or kills a finished or overdue run,
    // starts the next one when due. Returns the result of a run that has just ended.
    std::optional<DiscoveryResult> step(const std::vector<pollfd> &fds);
    // When step() next has something to do (a run due, or the running one overdue).
    Clock::time_point next_wakeup() const;
    // Kills a run under way; step() then starts no more.
    void stop();

    // Runs the script once and waits for it (before the job starts).
    DiscoveryResult run_now();

private:
    void start();
    void read(Fd &fd, std::string &into, const std::vector<pollfd> *fds);
    std::optional<DiscoveryResult> finish(int status);

    std::string script_;
    Clock::duration interval_, limit_;
    bool stopped_ = false;
    pid_t pid_ = -1; // the run under way, -1: none
    Fd out_, err_;
    std::string out_text_, err_text_;
    bool killed_ = false;
    Clock::time_point started_{}, next_run_{};
};

} // namespace dt::launch

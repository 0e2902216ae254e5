/* SPDX-License-Identifier: Apache-2.0 */
// Supervising the ranks of one job: start them, copy their output line by line, stop
// them all when one fails or when we are signalled, and say in one line what happened.
#pragma once

#include "launch/launch_discovery.h"
#include "launch/launch_hosts.h"
#include "launch/launch_process.h"
#include "launch/launch_signals.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dt::launch {

struct RankLaunch {
    Placement place;
    SpawnSpec spec;
    std::string stdin_data; // written to the rank's stdin pipe (remote ranks: the token)
    // How the summary line names this process ("mpirun"); empty: "rank N (host H, pid P)".
    std::string label;
    // Optional: reads each line the process writes on stderr and returns what it says
    // failed, else "". The first answer is added to the summary line of a failed job
    // (mpirun, which starts every rank, names the rank that failed).
    std::function<std::string(std::string_view line)> explain;
};

struct JobSettings {
    double timeout_s = 0; // 0: none
    double grace_s = 5;
    bool tag_output = true;
    // A rank that fails does not stop the others while at least min_np run: they re-form
    // without it (dt_context_reform).
    bool elastic = false;
    int min_np = 1;
    // Elastic: up to max_restarts times, a rank that dies is replaced by a process that
    // joins the running job (DISTTRAIN_ELASTIC_JOIN=1) in its place.
    int max_restarts = 0;
    // Elastic: the most ranks running at once, replacements and new ranks included.
    int max_np = 0;
    // Elastic: told the launch id of each process that ends badly, as soon as it is
    // reaped (DISTTRAIN_LAUNCH_ID, runtime/death_notices.h).
    std::function<void(int64_t launch_id)> on_death;
    // Elastic: the launch of a process joining the running job at a placement.
    std::function<RankLaunch(const Placement &)> joiner;
    // Elastic, --host-discovery-script: run every interval; free slots on the hosts it
    // lists get joiners, up to max_np ranks. Null: the hosts never change.
    HostDiscovery *discovery = nullptr;
    std::vector<HostSlots> hosts; // the hosts it listed before the job started
    LauncherKind launcher = LauncherKind::automatic;
    // Jobs whose store we serve, not elastic (runtime/join_notice.h): whether the rank
    // with this number joined the job, and whether any rank did. A rank that exits, with
    // code 0 too, before it joined while another did fails the job at once: the others
    // would wait for it in the rendezvous. Null: not known (the check is skipped).
    std::function<bool(int rank)> joined;
    std::function<bool()> any_joined;
    // Tells the ranks in the store that this rank exited with code before it joined, so
    // that those waiting for it fail at once naming it.
    std::function<void(int rank, int code)> exited_unjoined;
};

// Starts every rank and supervises them until all have ended. Returns the exit code for
// disttrainrun: 0 when every rank exited 0; else the first failing rank's exit code (or
// 128 + its signal), 127 when a rank could not be started (the ranks already started
// are stopped), 128 + n when we received signal n, 124 when --timeout expired. On
// failure writes a summary on stderr, after the ranks' output: a line for the first
// failure, which names every rank that exited with an error before we signalled it
// ("ranks 0 (code 1), 1 (code 3) exited with errors, first to exit: rank 0 (...)", or
// the likely cause: the first that did not report a lost peer, launch_summary.h); a line
// for each other rank that died by a signal we did not send ("was also killed by signal 6
// (Aborted), not sent by disttrainrun"); a line per signal for the ranks we ended while
// stopping the job ("ranks 0-2 were stopped by disttrainrun with signal 15
// (Terminated)"). Before returning, whether the job failed or not, stops what the ranks
// left running in their process groups: SIGTERM, then SIGKILL after the grace period.
int run_job(SignalReader &signals, std::vector<RankLaunch> ranks, const JobSettings &settings);

} // namespace dt::launch

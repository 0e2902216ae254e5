/* SPDX-License-Identifier: Apache-2.0 */
// One job of disttrainrun (run_job): its ranks, their output, the signals and timers that
// end it, and for --elastic the replacements and the hosts a discovery script adds. Its
// members are defined in launch_job.cc (the ranks' lives and the job's end) and
// launch_job_elastic.cc (the replacements and the ranks an elastic job grows by).
#pragma once

#include "launch/launch_job.h"
#include "launch/launch_proc.h"
#include "launch/launch_rank.h"

#include <poll.h>
#include <signal.h>

#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dt::launch {

class JobRun {
public:
    using Clock = std::chrono::steady_clock;

    JobRun(SignalReader &signals, std::vector<RankLaunch> launches, const JobSettings &s)
        : signals_(signals), launches_(std::move(launches)), settings_(s),
          fds_at_start_(open_descriptors()) {}

    int run();

private:
    void start_all();

    // Starts one process of l; on failure the Rank is not running, and the job fails
    // unless it is only growing (then the reason is said and the job goes on).
    Rank &start(const RankLaunch &l, bool optional = false);

    // The ranks that get a stdin pipe of their own (started through ssh).
    size_t with_stdin() const;

    // Our output is written as our readers take it (emit), so that a slow or stopped
    // reader never keeps this loop from signals, the timeout and failing ranks.
    void loop();

    // Whatever was left: flush partial lines, then end every process of the job (as Slurm
    // ends a job step's), whether the job failed or not: the process group of each rank
    // that still has members (a rank's background children, which outlive it) gets
    // SIGTERM and SIGCONT, then SIGKILL after the grace period. The group of a rank we
    // stopped got its SIGTERM with it: SIGKILL once that grace period is over. Every rank
    // has ended by now, so this only waits for what they left behind.
    void finish();

    // Output still queued (the summary) goes out as the reader takes it; once we are told
    // to stop, or are told while we wait, only until the drain limit (at least a moment).
    void drain_output();

    int poll_timeout_ms() const;

    void read_output(Fd &fd, LineTagger &tag, const std::vector<pollfd> &fds);

    void reap();

    void on_exit(Rank &r, int status);

    bool never_joined(const Rank &r) const;

    // A rank that exited 0 before it joined fails the job once another rank has joined:
    // that one waits for it in the rendezvous. Until then (the others may not use the
    // library at all, or not have reached it yet) the store is asked again every
    // probe_interval while ranks run.
    void check_unjoined();

    void on_signal(int sig);

    void on_timers();

    // Elastic jobs: the others re-form without r, as long as --min-np of them still run.
    // Says so at once (the job may go on for hours) and returns true; false when the job
    // must stop after all.
    bool survive_loss(Rank &r, int sig);

    // Elastic: once every rank that was not a replacement has ended, one of them well, the
    // job is done. A replacement that was let in ends with them, within moments; one still
    // running after kReplacementGrace was never let in (or is only leaving), so it is
    // stopped rather than left to wait out its DISTTRAIN_TIMEOUT. Stopping them at once
    // would also cut short a replacement that was let in and is a moment behind the others
    // in printing its last lines.
    static constexpr std::chrono::milliseconds kReplacementGrace{3000};

    void retire_unneeded_replacements();

    void stop_replacements_left();

    static std::vector<Placement> placements_of(const std::vector<RankLaunch> &launches);

    bool below_max_np() const;

    // Replacements go where the rank was, unless the discovery script dropped that host.
    bool still_listed(const std::string &host) const;

    bool growing() const { return !stopping_ && !finishing_; }

    // --host-discovery-script: a run that ended gives the hosts now listed; their free
    // slots get new ranks, up to --max-np running. A host that left the list keeps its
    // ranks (a flaky script must not kill healthy ranks; a host that is really gone loses
    // them by itself, and the survivors re-form).
    void discover(const std::vector<pollfd> &fds);

    // A host where a new rank failed gets no more (as Horovod's blacklist): else a host
    // that cannot run ranks would get a failing one every second for the whole job.
    void shun(const Rank &r);

    // Ranks running on h; for this machine under any of its names (localhost, 127.0.0.1,
    // its host name), so that a script naming it differently from -np's first list does
    // not double its slots.
    int running_on(const HostSlots &h) const;

    // Records the first failure and stops every rank still running: sig (after settle),
    // then SIGKILL after the grace period. SIGCONT follows sig, so that a stopped rank
    // (SIGSTOP, SIGTSTP) acts on it now rather than only at the SIGKILL.
    void fail(Outcome outcome, int sig = SIGTERM, Clock::duration settle = {});

    void signal_ranks();

    void kill_now();

    // "; stopped the other ranks" when any rank other than r is still running.
    std::string others_suffix(const Rank &r) const;

    int running_count() const;

    bool pipes_open() const;

    SignalReader &signals_;
    std::vector<RankLaunch> launches_;
    JobSettings settings_;
    std::deque<Rank> ranks_;
    std::vector<HostSlots> listed_; // what the discovery script listed last
    std::set<std::string> shunned_; // hosts that get no more new ranks
    int next_id_ = 0;               // the output tag ([N]) of the next new rank
    bool finishing_ = false;        // a rank has ended well: the job is ending
    std::string discovery_error_;   // the last failure reported, to say it once
    std::optional<Outcome> outcome_;
    int restarts_ = 0; // replacements started (elastic)
    bool outcome_from_exit_ = false; // the recorded failure is a rank's non-zero exit
    Clock::time_point failed_at_{};
    int stop_signal_ = SIGTERM;
    bool stopping_ = false;
    bool signals_sent_ = false; // stop_signal_ went to the ranks (at signal_at_)
    bool killed_ = false;
    long fds_at_start_ = 0;     // descriptors open when the job began
    Clock::time_point signal_at_{}, kill_at_{}, deadline_{}, drain_until_{};
    std::optional<Clock::time_point> retire_at_; // elastic: when to stop replacements left
    int reaped_count_ = 0;
    // A signal or --timeout: output our reader has not taken by the drain limit is dropped
    // (a rank's failure alone keeps every byte for a slow reader: its last lines say why).
    bool told_to_stop_ = false;
    std::vector<Rank *> unjoined_; // exited 0 before joining the job (check_unjoined)
    std::optional<Clock::time_point> probe_at_; // when to ask the store again whether any joined
};

} // namespace dt::launch

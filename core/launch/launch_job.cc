// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_job.h"

#include "launch/launch_output.h"
#include "launch/launch_limits.h"
#include "launch/launch_proc.h"
#include "launch/launch_rank.h"
#include "launch/launch_summary.h"
#include "telemetry/log.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace dt::launch {
namespace {

using Clock = std::chrono::steady_clock;

// Once every rank has exited, output still held in their pipes by leftover children is
// read for this long before we give up on it.
constexpr auto drain_limit = std::chrono::milliseconds(1000);

// When a rank exits with an error, the others are signalled this much later (or after the
// grace period, if shorter). A rank that fails usually takes its peers down with it: they
// see it leave (PeerLost) and exit with an error of their own, often before the failing
// rank's own exit is done (an interpreter shutting down). Signalled at once, that rank
// would die by our SIGTERM and its own exit code never be seen; this short wait lets the
// ranks failing together all end on their own, so that the summary can name each.
constexpr auto settle_limit = std::chrono::milliseconds(250);

// A rank that exited before it joined: the ranks waiting for it learn so from the store
// within moments and fail on their own, naming it, once rank 0 has told every rank that
// was waiting (it waits up to 500 ms for those it has not heard from, job_agreement.cc).
constexpr auto unjoined_settle = std::chrono::milliseconds(1000);

// How often the store is asked whether a rank joined, while one that exited 0 never did.
constexpr auto probe_interval = std::chrono::milliseconds(100);

Clock::duration seconds(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// As the user wrote it, as far as a double tells: 15 significant digits, so that a
// value as small as 1e-07 is not shown as 0, and 0.3 is not 0.299999999999999989.
std::string format_seconds(double s)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.15g", s);
    return text;
}

class Job {
public:
    Job(SignalReader &signals, std::vector<RankLaunch> launches, const JobSettings &s)
        : signals_(signals), launches_(std::move(launches)), settings_(s),
          fds_at_start_(open_descriptors()) {}

    int run()
    {
        if (settings_.timeout_s > 0)
            deadline_ = Clock::now() + seconds(settings_.timeout_s);
        start_all();
        loop();
        finish();
        if (outcome_) {
            std::string text;
            for (const std::string &line : summary_lines(ranks_, *outcome_))
                text += "disttrainrun: " + line + "\n";
            emit(2, text);
        }
        // The summary too goes out behind what is queued, within the drain limit.
        drain_output();
        return outcome_ ? outcome_->code : 0;
    }

private:
    void start_all()
    {
        // Joiners are added to the same deque, where no Rank ever moves (the output
        // taggers' callbacks hold references).
        for (const Placement &p : placements_of(launches_))
            next_id_ = std::max(next_id_, p.rank + 1);
        listed_ = settings_.hosts;
        for (RankLaunch &l : launches_)
            if (!start(l).running)
                return;
    }

    // Starts one process of l; on failure the Rank is not running, and the job fails
    // unless it is only growing (then the reason is said and the job goes on).
    Rank &start(const RankLaunch &l, bool optional = false)
    {
        std::string prefix = settings_.tag_output ? "[" + std::to_string(l.place.rank) + "] " : "";
        Rank &r = ranks_.emplace_back(l.place, prefix); // a deque: r stays put
        r.label = l.label;
        r.err_tag.watch([&r, explain = l.explain](std::string_view line) {
            if (line.find("DT_ERR_PEER_LOST") != std::string_view::npos)
                r.reported_lost_peer = true;
            if (explain && r.cause.empty())
                r.cause = explain(line);
        });
        try {
            Child c = spawn(l.spec);
            r.pid = c.pid;
            r.in = std::move(c.in);
            r.out = std::move(c.out);
            r.err = std::move(c.err);
            r.running = true;
            if (!l.stdin_data.empty())
                write_all(r.in.get(), l.stdin_data.data(), l.stdin_data.size());
            DT_LOG(debug, "launch", "started rank ", r.place.rank, " on ", r.place.host,
                   " as pid ", r.pid);
        } catch (const SpawnError &e) {
            if (!optional) {
                fail({"rank " + std::to_string(l.place.rank) + " (host " + l.place.host +
                          ") could not be started: " + e.message() +
                          limit_advice(e, fds_at_start_, launches_.size(), with_stdin()) +
                          others_suffix(r),
                      127});
            } else {
                std::string line = "disttrainrun: rank " + std::to_string(l.place.rank) +
                                   " on host " + l.place.host + " could not start: " +
                                   e.message() + "\n";
                emit(2, line);
            }
        }
        return r;
    }

    // The ranks that get a stdin pipe of their own (started through ssh).
    size_t with_stdin() const
    {
        return size_t(std::count_if(launches_.begin(), launches_.end(),
                                    [](const RankLaunch &l) { return l.spec.pipe_stdin; }));
    }

    // Our output is written as our readers take it (emit), so that a slow or stopped
    // reader never keeps this loop from signals, the timeout and failing ranks.
    void loop()
    {
        for (;;) {
            bool any_running = running_count() > 0;
            bool room = emit_queued() < emit_limit;
            auto now = Clock::now();
            // Time spent waiting for our reader is not the leftover children's drain time.
            if (!room && !any_running && !stopping_)
                drain_until_ = std::max(drain_until_, now + drain_limit);
            bool drained = !any_running && now >= drain_until_;
            // A slow reader gets all the output, also of a failed job (its last lines say
            // why it failed); once we are told to stop (a signal, --timeout), what it
            // takes before the drain limit.
            bool written = emit_queued() == 0 || (told_to_stop_ && drained);
            if (!any_running && written && (!pipes_open() || drained))
                return;
            bool reading = room && !drained;
            std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
            for (Rank &r : ranks_)
                for (Fd *fd : {&r.out, &r.err})
                    if (*fd && reading)
                        fds.push_back({fd->get(), POLLIN, 0});
            add_emit_fds(fds);
            if (settings_.discovery)
                settings_.discovery->add_fds(fds);
            int n = poll(fds.data(), fds.size(), poll_timeout_ms());
            if (n < 0 && errno != EINTR)
                throw_error(DT_ERR_INTERNAL, "disttrainrun: poll failed: ",
                            std::strerror(errno));
            emit_flush();
            if (n > 0) {
                for (Rank &r : ranks_) {
                    read_output(r.out, r.out_tag, fds);
                    read_output(r.err, r.err_tag, fds);
                }
                for (int sig; (sig = signals_.next()) != 0;)
                    on_signal(sig);
            }
            reap();
            on_timers();
            discover(fds);
        }
    }

    // Whatever was left: flush partial lines, then end every process of the job (as Slurm
    // ends a job step's), whether the job failed or not: the process group of each rank
    // that still has members (a rank's background children, which outlive it) gets
    // SIGTERM and SIGCONT, then SIGKILL after the grace period. The group of a rank we
    // stopped got its SIGTERM with it: SIGKILL once that grace period is over. Every rank
    // has ended by now, so this only waits for what they left behind.
    void finish()
    {
        for (Rank &r : ranks_) {
            r.out_tag.finish();
            r.err_tag.finish();
        }
        std::vector<pid_t> pgids;
        for (const Rank &r : ranks_)
            if (r.pid > 0)
                pgids.push_back(r.pid);
        std::set<pid_t> left = groups_with_members(pgids);
        if (left.empty())
            return;
        auto now = Clock::now();
        std::map<pid_t, Clock::time_point> kill_at;
        for (const Rank &r : ranks_) {
            if (r.pid <= 0 || !left.count(r.pid))
                continue;
            if (r.signalled) {
                if (stop_signal_ != SIGTERM) { // it got SIGINT: what it left gets SIGTERM
                    kill(-r.pid, SIGTERM);
                    kill(-r.pid, SIGCONT);
                }
                kill_at[r.pid] = killed_ ? now : kill_at_;
                continue;
            }
            DT_LOG(debug, "launch", "stopping what rank ", r.place.rank,
                   " left running (process group ", r.pid, ")");
            kill(-r.pid, SIGTERM);
            kill(-r.pid, SIGCONT);
            kill_at[r.pid] = now + seconds(settings_.grace_s);
        }
        for (;;) {
            now = Clock::now();
            std::vector<pid_t> waiting;
            for (auto &[pgid, when] : kill_at) {
                if (!left.count(pgid))
                    continue;
                if (now >= when)
                    kill(-pgid, SIGKILL);
                else
                    waiting.push_back(pgid);
            }
            if (waiting.empty())
                return;
            // Wait in small steps; a signal to us (a second Ctrl-C) means: do not wait.
            pollfd p{signals_.fd(), POLLIN, 0};
            if (poll(&p, 1, 20) > 0) {
                bool stop = false;
                for (int sig; (sig = signals_.next()) != 0;)
                    stop = stop || sig != SIGCHLD;
                if (stop)
                    for (pid_t pgid : waiting)
                        kill_at[pgid] = now;
            }
            left = groups_with_members(waiting);
        }
    }

    // Output still queued (the summary) goes out as the reader takes it; once we are told
    // to stop, or are told while we wait, only until the drain limit (at least a moment).
    void drain_output()
    {
        const auto bounded = [this] {
            return std::max(drain_until_, Clock::now() + std::chrono::milliseconds(200));
        };
        if (told_to_stop_ || emit_drain(Clock::time_point::max(), signals_.fd()))
            emit_drain(bounded());
    }

    int poll_timeout_ms() const
    {
        std::optional<Clock::time_point> next;
        auto consider = [&](Clock::time_point t) {
            if (!next || t < *next)
                next = t;
        };
        if (stopping_ && !signals_sent_)
            consider(signal_at_);
        else if (stopping_ && !killed_)
            consider(kill_at_);
        if (settings_.timeout_s > 0 && !stopping_)
            consider(deadline_);
        // Past it, only our reader is waited for (POLLOUT), not the clock.
        if (running_count() == 0 && drain_until_ > Clock::now())
            consider(drain_until_);
        if (retire_at_)
            consider(*retire_at_);
        if (probe_at_)
            consider(*probe_at_);
        if (settings_.discovery && growing())
            consider(settings_.discovery->next_wakeup());
        if (!next)
            return -1;
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
        return static_cast<int>(std::max<int64_t>(0, ms.count()));
    }

    void read_output(Fd &fd, LineTagger &tag, const std::vector<pollfd> &fds)
    {
        if (!fd)
            return;
        bool ready = false;
        for (const pollfd &p : fds)
            ready = ready || (p.fd == fd.get() && p.revents != 0);
        if (!ready)
            return;
        char buf[65536];
        // Bounded so one chatty rank cannot starve others, nor outgrow the output queue.
        for (int i = 0; i < 16 && emit_queued() < emit_limit; ++i) {
            ssize_t n = read(fd.get(), buf, sizeof buf);
            if (n > 0) {
                tag.feed(buf, static_cast<size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            tag.finish();
            fd.reset();
            return;
        }
    }

    void reap()
    {
        bool was_running = running_count() > 0;
        std::vector<std::pair<Rank *, int>> ended;
        for (Rank &r : ranks_) {
            if (!r.running)
                continue;
            int status = 0;
            pid_t got = waitpid(r.pid, &status, WNOHANG);
            if (got == r.pid) {
                ended.emplace_back(&r, status);
                r.running = false; // so that a failure among them does not signal the others
            }
        }
        // Ranks that ended together: a rank killed by a signal is the likely cause and the
        // others' errors its consequence (they report the lost peer), so report it first.
        std::stable_partition(ended.begin(), ended.end(),
                              [](const auto &e) { return WIFSIGNALED(e.second); });
        for (auto &[r, status] : ended)
            on_exit(*r, status);
        if (was_running && running_count() == 0)
            drain_until_ = Clock::now() + drain_limit;
    }

    void on_exit(Rank &r, int status)
    {
        r.running = false;
        r.reaped = true;
        r.exit_order = reaped_count_++;
        r.status = status;
        r.in.reset();
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        DT_LOG(debug, "launch", "rank ", r.place.rank, " (pid ", r.pid, ") ended, status ",
               status);
        if (!ok && settings_.on_death)
            settings_.on_death(r.place.launch_id < 0 ? r.place.rank : r.place.launch_id);
        // Once the job is stopping, a rank that never joined is a victim, not news.
        bool unjoined = !stopping_ && never_joined(r);
        if (unjoined)
            settings_.exited_unjoined(r.place.rank, WIFSIGNALED(status)
                                                        ? 128 + WTERMSIG(status)
                                                        : WEXITSTATUS(status));
        if (ok && unjoined) {
            unjoined_.push_back(&r);
            check_unjoined();
        }
        if (ok) {
            finishing_ = true; // the job is ending: no more new ranks
            if (settings_.elastic)
                retire_unneeded_replacements();
            return;
        }
        if (r.retired)
            return; // stopped by us after the job ended: not a failure
        // The signal we sent to stop it, or the SIGKILL after the grace period. We cannot
        // see who sent a signal: one of the same number from elsewhere counts as ours.
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        r.ended_by_us = r.signalled && sig != 0 &&
                        (sig == stop_signal_ || (killed_ && sig == SIGKILL));
        if (stopping_) {
            r.failed_alone = !r.signalled;
            // A rank that died by a signal we did not send, soon after the failure we
            // recorded was a non-zero exit: it is the cause, the exit its consequence
            // (that rank saw its peer vanish before the launcher reaped the peer).
            if (sig == 0 || r.ended_by_us || !outcome_from_exit_ ||
                Clock::now() - failed_at_ > std::chrono::seconds(2))
                return;
            outcome_from_exit_ = false;
            outcome_ = Outcome{who(r) + " was killed by signal " + signal_text(sig) +
                                   "; stopped the other ranks",
                               128 + sig, &r};
            return;
        }
        if (r.grown)
            shun(r);
        if (settings_.elastic && survive_loss(r, sig))
            return;
        if (sig != 0) {
            r.failed_alone = true;
            fail({who(r) + " was killed by signal " + signal_text(sig) + others_suffix(r),
                  128 + sig, &r});
        } else {
            int code = WEXITSTATUS(status);
            std::string hint = !r.place.local && code == 255
                                   ? " (ssh exits with 255 when the connection fails)"
                                   : "";
            if (unjoined && settings_.any_joined())
                hint += " before it joined the job";
            r.failed_alone = true;
            // The others are signalled a moment later (settle_limit), so that ranks
            // failing with this one end on their own and are named in the summary.
            auto settle = unjoined ? unjoined_settle : settle_limit;
            fail({who(r) + " exited with code " + std::to_string(code) + hint, code, &r,
                  true},
                 SIGTERM, std::min<Clock::duration>(settle, seconds(settings_.grace_s)));
            outcome_from_exit_ = true;
        }
    }

    bool never_joined(const Rank &r) const
    {
        return !settings_.elastic && settings_.joined && settings_.any_joined &&
               settings_.exited_unjoined && !settings_.joined(r.place.rank);
    }

    // A rank that exited 0 before it joined fails the job once another rank has joined:
    // that one waits for it in the rendezvous. Until then (the others may not use the
    // library at all, or not have reached it yet) the store is asked again every
    // probe_interval while ranks run.
    void check_unjoined()
    {
        probe_at_.reset();
        if (unjoined_.empty() || stopping_ || running_count() == 0)
            return;
        if (!settings_.any_joined()) {
            probe_at_ = Clock::now() + probe_interval;
            return;
        }
        Rank &r = *unjoined_.front();
        // Not failed_alone: the summary must not list an exit with code 0 as an error.
        // As for a failing exit, the others are signalled a moment later: told by the
        // store, those waiting for r fail on their own, naming it.
        fail({who(r) + " exited with code 0 before it joined the job, where the others "
                  "wait for it",
              1, &r, true},
             SIGTERM, std::min<Clock::duration>(unjoined_settle, seconds(settings_.grace_s)));
        outcome_from_exit_ = true;
    }

    void on_signal(int sig)
    {
        if (sig == SIGCHLD)
            return; // reap() runs after every wakeup
        told_to_stop_ = true;
        if (!stopping_) {
            // Ranks get what we got (SIGINT stays SIGINT, so a rank may save its state).
            fail({"received signal " + signal_text(sig) + "; stopped all ranks", 128 + sig},
                 sig == SIGHUP ? SIGTERM : sig);
            return;
        }
        // A second interrupt (or one during a stop) means: do not wait the grace period.
        kill_now();
    }

    void on_timers()
    {
        auto now = Clock::now();
        if (settings_.timeout_s > 0 && !stopping_ && now >= deadline_) {
            told_to_stop_ = true;
            fail({"the job did not finish within " + format_seconds(settings_.timeout_s) +
                      " s (--timeout); stopped all ranks",
                  124});
        }
        if (stopping_ && !signals_sent_ && now >= signal_at_)
            signal_ranks();
        if (stopping_ && signals_sent_ && !killed_ && now >= kill_at_)
            kill_now();
        if (probe_at_ && now >= *probe_at_)
            check_unjoined();
        if (retire_at_ && now >= *retire_at_) {
            retire_at_.reset();
            stop_replacements_left();
        }
    }

    // Elastic jobs: the others re-form without r, as long as --min-np of them still run.
    // Says so at once (the job may go on for hours) and returns true; false when the job
    // must stop after all.
    bool survive_loss(Rank &r, int sig)
    {
        std::string how = sig != 0 ? "was killed by signal " + signal_text(sig)
                                   : "exited with code " + std::to_string(WEXITSTATUS(r.status));
        std::string replaced;
        if (restarts_ < settings_.max_restarts && below_max_np() && still_listed(r.place.host)) {
            ++restarts_;
            Placement again = r.place;
            again.launch_id = next_id_++; // a new process: its own name in death notices
            Rank &fresh = start(settings_.joiner(again));
            if (!fresh.running)
                return false; // start() has failed the job
            fresh.replacement = true;
            replaced = "; started a replacement (pid " + std::to_string(fresh.pid) +
                       ", restart " + std::to_string(restarts_) + " of " +
                       std::to_string(settings_.max_restarts) + ")";
        }
        int left = running_count();
        // Once a rank has ended well the job is done: a rank lost after that (one cut off,
        // failing late) brings nobody below --min-np.
        if (left < settings_.min_np && !finishing_) {
            r.failed_alone = true;
            fail({who(r) + " " + how + "; " + std::to_string(left) + " rank(s) left, fewer "
                      "than --min-np " + std::to_string(settings_.min_np) + others_suffix(r),
                  sig != 0 ? 128 + sig : WEXITSTATUS(r.status), &r});
            return true;
        }
        std::string rest = left == 0 ? "; the others had ended well (--elastic)\n"
                                     : "; the job goes on with " + std::to_string(left) +
                                           " rank(s) (--elastic)\n";
        std::string line = "disttrainrun: " + who(r) + " " + how + replaced + rest;
        emit(2, line);
        return true;
    }

    // Elastic: once every rank that was not a replacement has ended, one of them well, the
    // job is done. A replacement that was let in ends with them, within moments; one still
    // running after kReplacementGrace was never let in (or is only leaving), so it is
    // stopped rather than left to wait out its DISTTRAIN_TIMEOUT. Stopping them at once
    // would also cut short a replacement that was let in and is a moment behind the others
    // in printing its last lines.
    static constexpr std::chrono::milliseconds kReplacementGrace{3000};

    void retire_unneeded_replacements()
    {
        bool one_ended_well = false;
        for (const Rank &o : ranks_) {
            if (o.replacement)
                continue;
            if (o.running)
                return;
            one_ended_well = one_ended_well ||
                             (WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0);
        }
        if (one_ended_well && !retire_at_)
            retire_at_ = Clock::now() + kReplacementGrace;
    }

    void stop_replacements_left()
    {
        for (Rank &o : ranks_) {
            if (!o.running || o.retired)
                continue;
            DT_LOG(info, "launch", "stopping replacement rank ", o.place.rank, " (pid ", o.pid,
                   "): it was not let in before the job ended");
            o.retired = true;
            o.in.reset();
            kill(-o.pid, SIGTERM);
            kill(-o.pid, SIGCONT);
        }
    }

    static std::vector<Placement> placements_of(const std::vector<RankLaunch> &launches)
    {
        std::vector<Placement> out;
        for (const RankLaunch &l : launches)
            out.push_back(l.place);
        return out;
    }

    bool below_max_np() const
    {
        return settings_.max_np <= 0 || running_count() < settings_.max_np;
    }

    // Replacements go where the rank was, unless the discovery script dropped that host.
    bool still_listed(const std::string &host) const
    {
        if (!settings_.discovery)
            return true;
        return std::any_of(listed_.begin(), listed_.end(),
                           [&](const HostSlots &h) { return h.host == host; });
    }

    bool growing() const { return !stopping_ && !finishing_; }

    // --host-discovery-script: a run that ended gives the hosts now listed; their free
    // slots get new ranks, up to --max-np running. A host that left the list keeps its
    // ranks (a flaky script must not kill healthy ranks; a host that is really gone loses
    // them by itself, and the survivors re-form).
    void discover(const std::vector<pollfd> &fds)
    {
        if (!settings_.discovery)
            return;
        if (!growing()) {
            settings_.discovery->stop();
            return;
        }
        std::optional<DiscoveryResult> got = settings_.discovery->step(fds);
        if (!got)
            return;
        if (!got->ok) {
            if (got->error != discovery_error_) {
                std::string line = "disttrainrun: " + got->error + "; kept the hosts it "
                                   "listed before\n";
                emit(2, line);
            }
            discovery_error_ = got->error;
            return;
        }
        discovery_error_.clear();
        listed_ = got->hosts;
        for (const HostSlots &h : listed_) {
            if (!h.local && settings_.launcher == LauncherKind::local)
                continue; // refused at the start for the first hosts; new ones are skipped
            if (shunned_.count(h.host))
                continue;
            int used = running_on(h);
            for (int slot = used; slot < h.slots && below_max_np(); ++slot) {
                Placement p;
                p.rank = next_id_++;
                p.host = h.host;
                p.local = h.local && settings_.launcher != LauncherKind::ssh;
                p.local_rank = slot;
                p.local_size = h.slots;
                Rank &fresh = start(settings_.joiner(p), true);
                fresh.replacement = true;
                fresh.grown = true;
                if (!fresh.running) {
                    shun(fresh);
                    break;
                }
                std::string line = "disttrainrun: started rank " + std::to_string(p.rank) +
                                   " on host " + h.host + " (pid " +
                                   std::to_string(fresh.pid) + ") to join the job: " +
                                   std::to_string(running_count()) + " of --max-np " +
                                   std::to_string(settings_.max_np) + " running\n";
                emit(2, line);
            }
        }
    }

    // A host where a new rank failed gets no more (as Horovod's blacklist): else a host
    // that cannot run ranks would get a failing one every second for the whole job.
    void shun(const Rank &r)
    {
        if (!shunned_.insert(r.place.host).second)
            return;
        std::string line = "disttrainrun: no more new ranks on host " + r.place.host +
                           ": rank " + std::to_string(r.place.rank) +
                           ", started there on a free slot, failed\n";
        emit(2, line);
    }

    // Ranks running on h; for this machine under any of its names (localhost, 127.0.0.1,
    // its host name), so that a script naming it differently from -np's first list does
    // not double its slots.
    int running_on(const HostSlots &h) const
    {
        int n = 0;
        for (const Rank &r : ranks_)
            n += r.running && (h.local ? is_local_host(r.place.host) : r.place.host == h.host);
        return n;
    }

    // Records the first failure and stops every rank still running: sig (after settle),
    // then SIGKILL after the grace period. SIGCONT follows sig, so that a stopped rank
    // (SIGSTOP, SIGTSTP) acts on it now rather than only at the SIGKILL.
    void fail(Outcome outcome, int sig = SIGTERM, Clock::duration settle = {})
    {
        if (stopping_)
            return;
        outcome_ = std::move(outcome);
        outcome_from_exit_ = false;
        failed_at_ = Clock::now();
        stop_signal_ = sig;
        stopping_ = true;
        signal_at_ = failed_at_ + settle;
        if (settle <= Clock::duration::zero())
            signal_ranks();
    }

    void signal_ranks()
    {
        signals_sent_ = true;
        kill_at_ = Clock::now() + seconds(settings_.grace_s);
        for (Rank &r : ranks_) {
            if (!r.running)
                continue;
            r.signalled = true;
            // A remote rank's wrapper stops the rank when its stdin (through ssh) closes.
            r.in.reset();
            kill(-r.pid, stop_signal_);
            kill(-r.pid, SIGCONT);
        }
        if (settings_.grace_s <= 0)
            kill_now();
    }

    void kill_now()
    {
        signals_sent_ = true;
        killed_ = true;
        for (Rank &r : ranks_) {
            if (!r.running && !r.signalled)
                continue;
            r.signalled = true;
            r.in.reset();
            kill(-r.pid, SIGKILL);
        }
    }

    // "; stopped the other ranks" when any rank other than r is still running.
    std::string others_suffix(const Rank &r) const
    {
        for (const Rank &o : ranks_)
            if (&o != &r && o.running)
                return "; stopped the other ranks";
        return "";
    }

    int running_count() const
    {
        int n = 0;
        for (const Rank &r : ranks_)
            n += r.running ? 1 : 0;
        return n;
    }

    bool pipes_open() const
    {
        for (const Rank &r : ranks_)
            if (r.out || r.err)
                return true;
        return false;
    }

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

} // namespace

int run_job(SignalReader &signals, std::vector<RankLaunch> ranks, const JobSettings &settings)
{
    return Job(signals, std::move(ranks), settings).run();
}

} // namespace dt::launch

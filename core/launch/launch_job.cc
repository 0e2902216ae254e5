// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_job.h"

#include "launch/launch_job_run.h"

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

} // namespace

int JobRun::run()
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

void JobRun::start_all()
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

Rank &JobRun::start(const RankLaunch &l, bool optional)
{
    // Appended, not "[" + ... + "] ": GCC 12 warns falsely (-Wrestrict) on that once inlined.
    std::string prefix;
    if (settings_.tag_output)
        prefix.append("[").append(std::to_string(l.place.rank)).append("] ");
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

size_t JobRun::with_stdin() const
{
    return size_t(std::count_if(launches_.begin(), launches_.end(),
                                [](const RankLaunch &l) { return l.spec.pipe_stdin; }));
}

void JobRun::loop()
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

void JobRun::finish()
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

void JobRun::drain_output()
{
    const auto bounded = [this] {
        return std::max(drain_until_, Clock::now() + std::chrono::milliseconds(200));
    };
    if (told_to_stop_ || emit_drain(Clock::time_point::max(), signals_.fd()))
        emit_drain(bounded());
}

int JobRun::poll_timeout_ms() const
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

void JobRun::read_output(Fd &fd, LineTagger &tag, const std::vector<pollfd> &fds)
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

void JobRun::reap()
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

void JobRun::on_exit(Rank &r, int status)
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

bool JobRun::never_joined(const Rank &r) const
{
    return !settings_.elastic && settings_.joined && settings_.any_joined &&
           settings_.exited_unjoined && !settings_.joined(r.place.rank);
}

void JobRun::check_unjoined()
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

void JobRun::on_signal(int sig)
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

void JobRun::on_timers()
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

std::vector<Placement> JobRun::placements_of(const std::vector<RankLaunch> &launches)
{
    std::vector<Placement> out;
    for (const RankLaunch &l : launches)
        out.push_back(l.place);
    return out;
}

void JobRun::fail(Outcome outcome, int sig, Clock::duration settle)
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

void JobRun::signal_ranks()
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

void JobRun::kill_now()
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

std::string JobRun::others_suffix(const Rank &r) const
{
    for (const Rank &o : ranks_)
        if (&o != &r && o.running)
            return "; stopped the other ranks";
    return "";
}

int JobRun::running_count() const
{
    int n = 0;
    for (const Rank &r : ranks_)
        n += r.running ? 1 : 0;
    return n;
}

bool JobRun::pipes_open() const
{
    for (const Rank &r : ranks_)
        if (r.out || r.err)
            return true;
    return false;
}

int run_job(SignalReader &signals, std::vector<RankLaunch> ranks, const JobSettings &settings)
{
    return JobRun(signals, std::move(ranks), settings).run();
}

} // namespace dt::launch

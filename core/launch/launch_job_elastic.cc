// SPDX-License-Identifier: Apache-2.0
// An elastic job's own part of JobRun (launch_job_run.h): a lost rank's replacement, the
// replacements stopped once the job is done, and the ranks started on the free slots of
// the hosts a --host-discovery-script lists.
#include "launch/launch_job_run.h"

#include "launch/launch_summary.h"
#include "telemetry/log.h"

#include <sys/wait.h>

#include <algorithm>

namespace dt::launch {

bool JobRun::survive_loss(Rank &r, int sig)
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

void JobRun::retire_unneeded_replacements()
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

void JobRun::stop_replacements_left()
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

bool JobRun::below_max_np() const
{
    return settings_.max_np <= 0 || running_count() < settings_.max_np;
}

bool JobRun::still_listed(const std::string &host) const
{
    if (!settings_.discovery)
        return true;
    return std::any_of(listed_.begin(), listed_.end(),
                       [&](const HostSlots &h) { return h.host == host; });
}

void JobRun::discover(const std::vector<pollfd> &fds)
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

void JobRun::shun(const Rank &r)
{
    if (!shunned_.insert(r.place.host).second)
        return;
    std::string line = "disttrainrun: no more new ranks on host " + r.place.host +
                       ": rank " + std::to_string(r.place.rank) +
                       ", started there on a free slot, failed\n";
    emit(2, line);
}

int JobRun::running_on(const HostSlots &h) const
{
    int n = 0;
    for (const Rank &r : ranks_)
        n += r.running && (h.local ? is_local_host(r.place.host) : r.place.host == h.host);
    return n;
}
} // namespace dt::launch

// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_summary.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace dt::launch {
namespace {

// "ranks 0-2, 5" (or "rank 3"): a compact list for jobs of many ranks.
std::string rank_list(const std::vector<int> &ranks)
{
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        if (i > 0)
            text += ", ";
        text += std::to_string(ranks[i]);
        if (j > i)
            text += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
        i = j + 1;
    }
    return text;
}

// "ranks 0 (code 1), 1-3 (code 3)": ranks (in order) with their exit codes, a run of
// consecutive ranks with one code given once.
std::string exit_list(const std::vector<const Rank *> &ranks)
{
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size();) {
        int code = WEXITSTATUS(ranks[i]->status);
        size_t j = i;
        while (j + 1 < ranks.size() && WEXITSTATUS(ranks[j + 1]->status) == code &&
               ranks[j + 1]->place.rank == ranks[j]->place.rank + 1)
            ++j;
        if (i > 0)
            text += ", ";
        text += std::to_string(ranks[i]->place.rank);
        if (j > i) // appended piecewise: GCC 12 warns (-Wrestrict) of "-" + std::string
            text.append("-").append(std::to_string(ranks[j]->place.rank));
        text += " (code " + std::to_string(code) + ")";
        i = j + 1;
    }
    return text;
}

// The rank that exited first is often not the cause: a rank that raised in Python destroys its
// context as it exits, and a peer that sees it leave may exit before it has. Among the
// ranks that failed on their own, the first to exit that did not report a lost peer is
// named as the likely cause, with the ranks that did; without one, the first to exit.
std::string first_cause(const std::vector<const Rank *> &exited, const Rank &first)
{
    const Rank *cause = nullptr;
    std::vector<int> lost;
    for (const Rank *r : exited) {
        if (r->reported_lost_peer)
            lost.push_back(r->place.rank);
        else if (!cause || r->exit_order < cause->exit_order)
            cause = r;
    }
    if (!first.reported_lost_peer || !cause)
        return ", first to exit: " + who(first);
    return "; the likely cause is " + who(*cause) + ": " + rank_list(lost) +
           " reported a lost peer (DT_ERR_PEER_LOST)";
}

} // namespace

std::string who(const Rank &r)
{
    if (!r.label.empty())
        return r.label + " (pid " + std::to_string(r.pid) + ")";
    return "rank " + std::to_string(r.place.rank) + " (host " + r.place.host +
           (r.place.local ? ", pid " : ", ssh pid ") + std::to_string(r.pid) + ")";
}

std::string signal_text(int sig)
{
    const char *name = strsignal(sig);
    return std::to_string(sig) + " (" + (name ? name : "unknown signal") + ")";
}

std::vector<std::string> summary_lines(const std::deque<Rank> &ranks, const Outcome &outcome)
{
    std::vector<const Rank *> exited; // with an error, on their own, by rank
    for (const Rank &r : ranks)
        if (r.failed_alone && r.reaped && WIFEXITED(r.status))
            exited.push_back(&r);
    std::sort(exited.begin(), exited.end(), [](const Rank *a, const Rank *b) {
        return a->place.rank < b->place.rank;
    });
    bool first_exited = outcome.rank != nullptr &&
                        std::find(exited.begin(), exited.end(), outcome.rank) !=
                            exited.end();
    std::string first = outcome.message;
    std::string also; // the others that exited with an error, when the first did not
    if (first_exited && exited.size() > 1) {
        first = exit_list(exited) + " exited with errors" + first_cause(exited, *outcome.rank);
    } else {
        std::vector<const Rank *> others;
        for (const Rank *r : exited)
            if (r != outcome.rank)
                others.push_back(r);
        if (!others.empty())
            also = exit_list(others) +
                   (others.size() == 1 ? " also exited with an error"
                                       : " also exited with errors") +
                   " before disttrainrun stopped the job";
    }
    if (outcome.stop_suffix_later &&
        std::any_of(ranks.begin(), ranks.end(),
                    [](const Rank &r) { return r.signalled; }))
        first += "; stopped the other ranks";
    // What a launcher in between (mpirun) said of its ranks.
    for (const Rank &r : ranks)
        if (!r.cause.empty())
            first += "; " + r.cause;
    std::vector<std::string> lines{first};
    if (!also.empty())
        lines.push_back(also);
    std::map<int, std::vector<int>> ours;
    for (const Rank &r : ranks) {
        if (!r.reaped || !WIFSIGNALED(r.status) || &r == outcome.rank)
            continue;
        int sig = WTERMSIG(r.status);
        if (r.ended_by_us)
            ours[sig].push_back(r.place.rank);
        else
            lines.push_back(who(r) + " was also killed by signal " + signal_text(sig) +
                            ", not sent by disttrainrun");
    }
    for (auto &[sig, numbers] : ours) {
        std::sort(numbers.begin(), numbers.end());
        lines.push_back(rank_list(numbers) + (numbers.size() == 1 ? " was" : " were") +
                        " stopped by disttrainrun with signal " + signal_text(sig));
    }
    return lines;
}

} // namespace dt::launch

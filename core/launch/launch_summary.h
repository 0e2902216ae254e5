/* SPDX-License-Identifier: Apache-2.0 */
// What disttrainrun says when a job fails: the summary lines after the ranks' output, and
// how its messages name a process and a signal.
#pragma once

#include "launch/launch_rank.h"

#include <deque>
#include <string>
#include <vector>

namespace dt::launch {

// "rank 2 (host node1, pid 4242)", or the process's label ("mpirun (pid 4242)").
std::string who(const Rank &r);

// "15 (Terminated)".
std::string signal_text(int sig);

// The first failure, with the other ranks that exited with an error on their own
// (before disttrainrun signalled them); then every other rank that died by a signal:
// one line each for those that met it on their own (a crash must not hide behind the
// first failure), one line per signal for those we ended while stopping the job.
//
// The exit status stays the first failure's (as with mpirun and torchrun), even when
// another rank's exit looks more like the cause. A rank that only reacted to a lost
// peer exits with an error too (a Python rank's PeerLostError exits 1, as any other
// uncaught exception), often before the rank that failed has finished exiting, and
// its code cannot be told apart from a failure of its own. So every rank that failed
// on its own is listed with its code, and the first is named.
std::vector<std::string> summary_lines(const std::deque<Rank> &ranks, const Outcome &outcome);

} // namespace dt::launch

/* SPDX-License-Identifier: Apache-2.0 */
// What the launcher knows of one process of a job (a rank, a replacement, mpirun) while
// it supervises it, and of the failure that stopped the job: the records the job's state
// machine (launch_job.cc) keeps and its summary (launch_summary.h) reads.
#pragma once

#include "launch/launch_hosts.h"
#include "launch/launch_output.h"
#include "launch/launch_process.h"

#include <sys/types.h>

#include <string>

namespace dt::launch {

struct Rank {
    Placement place;
    std::string label; // RankLaunch::label
    std::string cause; // the first answer of RankLaunch::explain
    pid_t pid = -1;
    Fd in, out, err;
    LineTagger out_tag, err_tag;
    bool running = false;   // started and not yet reaped
    bool signalled = false; // among the ranks we are stopping
    bool reaped = false;
    int status = 0;         // the wait status, once reaped
    bool ended_by_us = false; // died by the signal we sent to stop it
    bool replacement = false; // elastic: a joiner (for a rank that died, or on a new slot)
    bool retired = false;     // a replacement stopped because the job had ended
    bool grown = false;       // elastic: started on a free slot the discovery script gave
    // Ended badly on its own once the job was failing: the failure that stopped the job,
    // or a rank that ended with an error before disttrainrun signalled it.
    bool failed_alone = false;
    // It printed DT_ERR_PEER_LOST on stderr: it most likely failed because another rank
    // did, so the summary names another as the cause where it can.
    bool reported_lost_peer = false;
    int exit_order = -1; // 0 for the first process reaped, and so on

    Rank(const Placement &p, const std::string &prefix)
        : place(p), out_tag(1, prefix), err_tag(2, prefix) {}
};

// The failure that stopped the job.
struct Outcome {
    std::string message; // the summary line, without "disttrainrun: "
    int code = 1;
    const Rank *rank = nullptr; // the rank it names, if any
    // "; stopped the other ranks" is added to the message at the end if any rank was
    // signalled (the others are signalled a moment after a rank's failing exit).
    bool stop_suffix_later = false;
};

} // namespace dt::launch

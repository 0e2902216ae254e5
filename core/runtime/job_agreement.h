/* SPDX-License-Identifier: Apache-2.0 */
// The settings every rank of a job must share, checked through the store once at
// dt_context_create, before any transport connects: a rank started with another size,
// transport list, ordered mode or library API fails create with DT_ERR_INVALID_CONFIG
// naming the ranks and their values, on every rank, instead of hanging until the timeout.
//
// Protocol (keys under the context's prefix): every rank r first adds 1 to "agree/claim<r>"
// and fails unless it was the first (the namespace served a job before: DT_ERR_INVALID_CONFIG
// saying to give each job its own store or DISTTRAIN_JOB_ID). Each rank r > 0 then sets
// "agree/rank<r>" and waits for "agree/verdict"; rank 0 reads ranks 1..size-1 in turn,
// comparing each with its own as it arrives, and sets the verdict: "ok" with its own
// settings, or "fail" with the message (the first disagreement it sees, or the rank it gave
// up waiting for). A rank > 0 also compares its settings with rank 0's from an "ok"
// verdict, which catches a rank beyond rank 0's idea of the size. Cost: three store round
// trips for a rank > 0, size + 1 for rank 0; nothing for a single process or a job without
// a shared store.
#pragma once

#include "bootstrap/store.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dt {

struct JobSettings {
    int size = 1;
    std::vector<std::string> transports; // as configured ("auto" not expanded)
    bool ordered = false;
    int api_major = 0;
    int api_minor = 0;
};

// One line per field, as published in the store.
std::string encode(const JobSettings &s);
// Throws DT_ERR_PROTOCOL naming `from` when `text` is not what encode makes.
JobSettings decode(const std::string &from, const std::string &text);

// "" when they agree; otherwise every disagreeing field, e.g. "ranks disagree on the job
// size: rank 0 says 2, rank 1 says 3".
std::string disagreement(int rank_a, const JobSettings &a, int rank_b, const JobSettings &b);

// The store protocol above. Throws DT_ERR_INVALID_CONFIG on a disagreement and
// DT_ERR_TIMEOUT when a rank does not arrive within timeout (<= 0: no limit). On rank 0,
// what missing_hint returns (when given) is added to the message naming a rank that did
// not arrive: what else rank 0 knows of it, such as connections its store refused.
// unmet_hint is added to every message saying that a rank did not arrive (on rank 0) or
// that rank 0 did not answer (on the others): where else that rank may be waiting.
// exits_noticed: the context is the whole job of a launcher that says in the store which
// ranks exited before they joined (join_notice.h); rank 0 then fails at once, naming the
// rank and its exit code, rather than wait out the timeout for it.
void check_job_agreement(bootstrap::StoreClient &store, const std::string &prefix, int rank,
                         const JobSettings &mine, std::chrono::milliseconds timeout,
                         const std::function<std::string()> &missing_hint = {},
                         const std::string &unmet_hint = {}, bool exits_noticed = false);

} // namespace dt

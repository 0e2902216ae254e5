// SPDX-License-Identifier: Apache-2.0
// check_job_agreement and its encoding (job_agreement.h).
#include "runtime/job_agreement.h"

#include "runtime/env.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace dt {

namespace {

std::string join(const std::vector<std::string> &names)
{
    std::string out;
    for (const auto &n : names)
        out += (out.empty() ? "" : ",") + n;
    return out;
}

// The store's wait for a key that may never come; a timeout <= 0 waits without limit.
std::chrono::milliseconds wait_for(std::chrono::milliseconds timeout)
{
    return timeout.count() > 0 ? timeout : std::chrono::milliseconds(-1);
}

constexpr std::chrono::milliseconds kVerdictGrace{5000};

// Rank 0 sets a failed verdict, then keeps its store (which it may serve) up until the
// `arrived` ranks it heard from have read it, and for a moment longer for the others up to
// `expected` that may be waiting unheard; it is about to fail, so this bounded wait is the
// whole cost of every rank getting the message rather than a lost connection.
void publish_failure(bootstrap::StoreClient &store, const std::string &prefix,
                     const std::string &verdict, int arrived, int expected)
{
    store.set(prefix + "agree/verdict", verdict);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto known_by = start + std::chrono::seconds(10);
    const auto others_by = start + std::chrono::milliseconds(500);
    try {
        for (;;) {
            int64_t read = store.add(prefix + "agree/read", 0);
            auto now = clock::now();
            if (read >= expected || now >= known_by || (read >= arrived && now >= others_by))
                return;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    } catch (const Error &) {
        // The store is gone (a launcher that exited): nothing more to wait for.
    }
}

} // namespace

std::string encode(const JobSettings &s)
{
    return cat("size=", s.size, "\ntransport=", join(s.transports), "\nordered=",
               s.ordered ? 1 : 0, "\napi=", s.api_major, ".", s.api_minor);
}

JobSettings decode(const std::string &from, const std::string &text)
{
    JobSettings s;
    int seen = 0;
    std::istringstream in(text);
    std::string line;
    auto bad = [&](const std::string &why) {
        throw_error(DT_ERR_PROTOCOL, "the job settings ", from, " published are malformed (",
                    why, "): '", text, "'");
    };
    try {
        while (std::getline(in, line)) {
            size_t eq = line.find('=');
            if (eq == std::string::npos)
                bad("a line without '='");
            std::string key = line.substr(0, eq), value = line.substr(eq + 1);
            if (key == "size") {
                s.size = static_cast<int>(env::parse_int("size", value, 1, 1 << 20));
                seen |= 1;
            } else if (key == "transport") {
                s.transports = env::split_list(value);
                seen |= 2;
            } else if (key == "ordered") {
                s.ordered = env::parse_int("ordered", value, 0, 1) == 1;
                seen |= 4;
            } else if (key == "api") {
                size_t dot = value.find('.');
                if (dot == std::string::npos)
                    bad("an API version without '.'");
                s.api_major = static_cast<int>(env::parse_int("api", value.substr(0, dot), 0, 1 << 16));
                s.api_minor = static_cast<int>(env::parse_int("api", value.substr(dot + 1), 0, 1 << 16));
                seen |= 8;
            } // unknown keys: a newer library's extra settings, compared by it
        }
    } catch (const Error &e) {
        if (e.status() == DT_ERR_PROTOCOL)
            throw;
        bad(e.what());
    }
    if (seen != 15)
        bad("a field is missing");
    return s;
}

std::string disagreement(int rank_a, const JobSettings &a, int rank_b, const JobSettings &b)
{
    std::string out;
    auto add = [&](const char *what, const std::string &va, const std::string &vb) {
        if (va == vb)
            return;
        out += cat(out.empty() ? "" : "; ", "ranks disagree on ", what, ": rank ", rank_a,
                   " says ", va, ", rank ", rank_b, " says ", vb);
    };
    add("the job size", std::to_string(a.size), std::to_string(b.size));
    add("the transport list (DISTTRAIN_TRANSPORT)", cat("'", join(a.transports), "'"),
        cat("'", join(b.transports), "'"));
    add("ordered mode (DISTTRAIN_ORDERED)", a.ordered ? "1" : "0", b.ordered ? "1" : "0");
    add("the library's API version", cat(a.api_major, ".", a.api_minor),
        cat(b.api_major, ".", b.api_minor));
    return out;
}

void check_job_agreement(bootstrap::StoreClient &store, const std::string &prefix, int rank,
                         const JobSettings &mine, std::chrono::milliseconds timeout,
                         const std::function<std::string()> &missing_hint)
{
    const std::string verdict_key = prefix + "agree/verdict";
    if (rank != 0) {
        store.set(cat(prefix, "agree/rank", rank), encode(mine));
        std::string verdict;
        try {
            // Longer than rank 0's own wait, so that rank 0's message naming a missing
            // rank arrives here before this rank gives up on its own.
            verdict = store.get(verdict_key, wait_for(timeout + kVerdictGrace));
        } catch (const Error &e) {
            if (e.status() != DT_ERR_TIMEOUT)
                throw;
            throw_error(DT_ERR_TIMEOUT, "rank 0 did not confirm the job's settings within ",
                        timeout.count() / 1000.0, " s (DISTTRAIN_TIMEOUT): is rank 0 running "
                        "with the same store address and token?");
        }
        if (verdict.rfind("fail\n", 0) == 0) {
            // Rank 0 keeps its store up until the ranks it heard from have read this.
            try {
                store.add(prefix + "agree/read", 1);
            } catch (const Error &) {
            }
            std::string why = verdict.substr(5);
            throw_error(why.rfind("timeout:", 0) == 0 ? DT_ERR_TIMEOUT : DT_ERR_INVALID_CONFIG,
                        why.rfind("timeout:", 0) == 0 ? why.substr(8) : why);
        }
        if (verdict.rfind("ok\n", 0) != 0)
            throw_error(DT_ERR_PROTOCOL, "rank 0's verdict on the job's settings is "
                        "malformed: '", verdict, "'");
        std::string why = disagreement(0, decode("rank 0", verdict.substr(3)), rank, mine);
        if (!why.empty())
            throw_error(DT_ERR_INVALID_CONFIG, why);
        return;
    }
    // One deadline for the whole wait, so that rank 0 gives up before the others do.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int r = 1; r < mine.size; ++r) {
        std::string theirs;
        try {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            theirs = store.get(cat(prefix, "agree/rank", r),
                               wait_for(timeout.count() > 0
                                            ? std::max(left, std::chrono::milliseconds(0))
                                            : timeout));
        } catch (const Error &e) {
            if (e.status() != DT_ERR_TIMEOUT)
                throw;
            std::string why = cat("rank ", r, " of ", mine.size, " did not reach "
                                  "dt_context_create within ", timeout.count() / 1000.0,
                                  " s (DISTTRAIN_TIMEOUT); ranks 0..", r - 1, " did",
                                  missing_hint ? missing_hint() : std::string());
            publish_failure(store, prefix, "fail\ntimeout:" + why, r - 1, mine.size - 1);
            throw_error(DT_ERR_TIMEOUT, why);
        }
        std::string why = disagreement(0, mine, r, decode(cat("rank ", r), theirs));
        if (!why.empty()) {
            publish_failure(store, prefix, "fail\n" + why, r, mine.size - 1);
            throw_error(DT_ERR_INVALID_CONFIG, why);
        }
    }
    store.set(verdict_key, "ok\n" + encode(mine));
    DT_LOG(debug, "context", "all ", mine.size, " ranks agree on the job's settings");
}

} // namespace dt

// SPDX-License-Identifier: Apache-2.0
// check_job_agreement and its encoding (job_agreement.h).
#include "runtime/job_agreement.h"

#include "runtime/env.h"
#include "runtime/error.h"
#include "runtime/join_notice.h"
#include "telemetry/log.h"

#include <algorithm>
#include <optional>
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
// How often a rank asks whether the rank it waits for exited before it joined.
constexpr std::chrono::milliseconds kExitCheck{100};

// A rank other than 0 waits for rank 0's verdict; with exit notices, in slices, failing
// at once when rank 0 exited before it joined.
std::optional<std::string> await_verdict(bootstrap::StoreClient &store, const std::string &key,
                                         std::chrono::milliseconds timeout, bool exits_noticed)
{
    if (!exits_noticed)
        return store.try_get(key, wait_for(timeout));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (std::optional<std::string> got = store.try_get(key, kExitCheck))
            return got;
        if (std::optional<std::string> code = exited_before_joining(store, 0))
            throw_error(DT_ERR_PEER_LOST, "rank 0 exited with code ", *code, " before it "
                        "joined the job (it never reached dt_context_create for this "
                        "context)");
        if (timeout.count() > 0 && std::chrono::steady_clock::now() >= deadline)
            return std::nullopt;
    }
}

std::string already_served(bootstrap::StoreClient &store, int rank)
{
    return cat("a rank ", rank, " met in the rendezvous store at ", store.address(),
               " before this one: this store already served a job, whose entries this job "
               "would take for its own; give each job its own store, or a DISTTRAIN_JOB_ID "
               "of its own (the same on every rank of one job); or two processes of this "
               "job were started as rank ", rank);
}

// Each rank claims its number once per namespace, before it reads or writes anything
// there: a number claimed before means an earlier job met under these keys (a store served
// outside the jobs, shared without DISTTRAIN_JOB_ID), whose settings, verdict and
// addresses would be read as this job's and blame ranks that agree.
void claim(bootstrap::StoreClient &store, const std::string &prefix, int rank)
{
    if (store.add(cat(prefix, "agree/claim", rank), 1) != 1)
        throw_error(DT_ERR_INVALID_CONFIG, already_served(store, rank));
}

// A rank > 0 about to fail on rank 0's verdict: an earlier job's verdict reaches the ranks
// that job did not have (their claims were new) before this job's rank 0 finds the earlier
// claim of its own number. Where rank 0 has claimed its number again, that is the error.
void fail_if_served_before(bootstrap::StoreClient &store, const std::string &prefix)
{
    int64_t rank0_claims = 0;
    try {
        rank0_claims = store.add(prefix + "agree/claim0", 0);
    } catch (const Error &) {
        return; // the store is gone: the verdict's own message is all there is
    }
    if (rank0_claims > 1)
        throw_error(DT_ERR_INVALID_CONFIG, already_served(store, 0));
}

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
                         const std::function<std::string()> &missing_hint,
                         const std::string &unmet_hint, bool exits_noticed)
{
    const std::string verdict_key = prefix + "agree/verdict";
    claim(store, prefix, rank);
    if (rank != 0) {
        store.set(cat(prefix, "agree/rank", rank), encode(mine));
        // Longer than rank 0's own wait, so that rank 0's message naming a missing rank
        // arrives here before this rank gives up on its own. A store that fails says so.
        std::optional<std::string> answer = await_verdict(store, verdict_key,
                                                          timeout + kVerdictGrace,
                                                          exits_noticed);
        if (!answer)
            throw_error(DT_ERR_TIMEOUT, "rank 0 did not confirm the job's settings within ",
                        timeout.count() / 1000.0, " s (DISTTRAIN_TIMEOUT): is rank 0 running "
                        "with the same store address and token?", unmet_hint);
        const std::string &verdict = *answer;
        if (verdict.rfind("fail\n", 0) == 0) {
            fail_if_served_before(store, prefix); // while rank 0 waits for the reads
            // Rank 0 keeps its store up until the ranks it heard from have read this.
            try {
                store.add(prefix + "agree/read", 1);
            } catch (const Error &) {
            }
            std::string why = verdict.substr(5);
            if (why.rfind("lost:", 0) == 0)
                throw_error(DT_ERR_PEER_LOST, why.substr(5));
            throw_error(why.rfind("timeout:", 0) == 0 ? DT_ERR_TIMEOUT : DT_ERR_INVALID_CONFIG,
                        why.rfind("timeout:", 0) == 0 ? why.substr(8) : why);
        }
        if (verdict.rfind("ok\n", 0) != 0)
            throw_error(DT_ERR_PROTOCOL, "rank 0's verdict on the job's settings is "
                        "malformed: '", verdict, "'");
        JobSettings theirs = decode("rank 0", verdict.substr(3));
        std::string why = disagreement(0, theirs, rank, mine);
        if (why.empty())
            return;
        fail_if_served_before(store, prefix);
        if (rank >= theirs.size) // rank 0 never waited for this rank: its verdict may be old
            why += " (if this store served an earlier job, that job's rank 0 said so: give "
                   "each job its own store, or a DISTTRAIN_JOB_ID of its own)";
        throw_error(DT_ERR_INVALID_CONFIG, why);
    }
    // One deadline for the whole wait, so that rank 0 gives up before the others do.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int r = 1; r < mine.size; ++r) {
        std::optional<std::string> published;
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            auto wait = wait_for(timeout.count() > 0
                                     ? std::max(left, std::chrono::milliseconds(0))
                                     : timeout);
            // With exit notices, in slices: between them, whether rank r is gone.
            if (exits_noticed && (wait.count() < 0 || wait > kExitCheck))
                wait = kExitCheck;
            // Only an absent key is a missing rank; a store that fails throws as it is.
            published = store.try_get(cat(prefix, "agree/rank", r), wait);
            if (published || !exits_noticed)
                break;
            if (std::optional<std::string> code = exited_before_joining(store, r)) {
                std::string why = cat("rank ", r, " exited with code ", *code, " before it "
                                      "joined the job (it never reached dt_context_create "
                                      "for this context)");
                // Rank r will never read the verdict: it is not waited for.
                publish_failure(store, prefix, "fail\nlost:" + why, r - 1, mine.size - 2);
                throw_error(DT_ERR_PEER_LOST, why);
            }
            if (timeout.count() > 0 && std::chrono::steady_clock::now() >= deadline)
                break;
        }
        if (!published) {
            // All rank 0 knows is that rank r wrote nothing here: it may not have started,
            // or it may be up and unable to reach the store.
            std::string why = cat("rank ", r, " of ", mine.size, " did not reach the "
                                  "rendezvous store within ", timeout.count() / 1000.0,
                                  " s (DISTTRAIN_TIMEOUT); ranks 0..", r - 1, " did. Check "
                                  "that rank ", r, " was started with the same store address, "
                                  "token and DISTTRAIN_JOB_ID, and that the store's address is "
                                  "reachable from its host",
                                  missing_hint ? missing_hint() : std::string(), unmet_hint);
            publish_failure(store, prefix, "fail\ntimeout:" + why, r - 1, mine.size - 1);
            throw_error(DT_ERR_TIMEOUT, why);
        }
        std::string why = disagreement(0, mine, r, decode(cat("rank ", r), *published));
        if (!why.empty()) {
            publish_failure(store, prefix, "fail\n" + why, r, mine.size - 1);
            throw_error(DT_ERR_INVALID_CONFIG, why);
        }
    }
    store.set(verdict_key, "ok\n" + encode(mine));
    DT_LOG(debug, "context", "all ", mine.size, " ranks agree on the job's settings");
}

} // namespace dt

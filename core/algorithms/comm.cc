// SPDX-License-Identifier: Apache-2.0
// Comm: posting, waiting and failing point-to-point transfers for one collective call.
//
// Failure policy: when a transfer fails or the deadline passes, the transport is aborted
// before the error is thrown. The collective's other requests and buffers live on the
// unwinding stack; aborting makes the plugin fail (and forget) every pending request
// while they are still alive, so nothing writes into freed memory afterwards. It also
// tells the peers this rank left, so they fail fast instead of waiting for their own
// deadline. A failed collective leaves the ranks out of step anyway: the context cannot
// go on using this transport.
#include "algorithms/comm.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace dt::algo {

namespace {

// Spin on progress(0) this long before blocking in the transport: short waits (the next
// segment of a ring, a small message) finish without a sleep, long ones cost no CPU.
constexpr auto kSpin = std::chrono::microseconds(30);
// Longest single blocking progress call; bounds how late the deadline check can run.
constexpr int32_t kBlockMs = 5;

const char *status_text(int32_t status)
{
    return dt_status_string(static_cast<dt_status_t>(status));
}

dt_status_t as_error(int32_t status)
{
    // A plugin that completes a request with something that is not an error code has a
    // bug; report it as internal rather than pass a positive "error" on.
    return status < 0 ? static_cast<dt_status_t>(status) : DT_ERR_INTERNAL;
}

} // namespace

Comm::Comm(Transport &transport, int rank, int size, uint64_t tag, Clock::time_point deadline,
           const char *collective)
    : transport_(transport), rank_(rank), size_(size), tag_(tag), deadline_(deadline),
      collective_(collective != nullptr ? collective : "collective")
{
}

Request Comm::isend(int peer, const void *buf, size_t len)
{
    if (check_ != nullptr && checked_sends_.insert(peer))
        return checked_send(global(peer), buf, len);
    return post_send(global(peer), buf, len);
}

Request Comm::irecv(int peer, void *buf, size_t len)
{
    if (check_ != nullptr && checked_recvs_.insert(peer))
        return checked_recv(global(peer), buf, len);
    return post_recv(global(peer), buf, len);
}

Request Comm::post_send(int world_peer, const void *buf, size_t len)
{
    auto req = std::make_unique<PendingTransfer>();
    req->peer = world_peer;
    req->len = len;
    req->raw.status = DTP_INPROGRESS;
    set_last_error("");
    int32_t rc = transport_.ops().isend(transport_.instance(), req->peer, tag_, buf, len,
                                        &req->raw);
    if (rc < 0) {
        req->raw.status = rc;
        fail(*req);
    }
    return req;
}

Request Comm::post_recv(int world_peer, void *buf, size_t len)
{
    auto req = std::make_unique<PendingTransfer>();
    req->peer = world_peer;
    req->is_recv = true;
    req->len = len;
    req->raw.status = DTP_INPROGRESS;
    set_last_error("");
    int32_t rc = transport_.ops().irecv(transport_.instance(), req->peer, tag_, buf, len,
                                        &req->raw);
    if (rc < 0) {
        req->raw.status = rc;
        fail(*req);
    }
    return req;
}

Request Comm::checked_send(int world_peer, const void *buf, size_t len)
{
    constexpr size_t kCheck = sizeof(CallCheck);
    if (len <= kInlineCheckedBytes) {
        Staging staging = take_staging();
        std::memcpy(staging.get(), check_, kCheck);
        if (len > 0)
            std::memcpy(staging.get() + kCheck, buf, len);
        Request req = post_send(world_peer, staging.get(), kCheck + len);
        req->staging = std::move(staging);
        return req;
    }
    Staging staging = take_staging();
    std::memcpy(staging.get(), check_, kCheck);
    Request check = post_send(world_peer, staging.get(), kCheck);
    check->staging = std::move(staging);
    Request req = post_send(world_peer, buf, len);
    req->check = std::move(check);
    return req;
}

Request Comm::checked_recv(int world_peer, void *buf, size_t len)
{
    constexpr size_t kCheck = sizeof(CallCheck);
    // Room for any inline message: a peer that disagrees on the count sends more or less
    // than this rank expects, and reading its check names the disagreement, where a
    // message too large for the receive would only be a transport error.
    Staging staging = take_staging();
    Request req = post_recv(world_peer, staging.get(), kStagingBytes);
    req->staging = std::move(staging);
    watched_.push_back(req.get());
    if (len <= kInlineCheckedBytes) {
        req->len = kCheck + len;
        req->out = buf;
        return req;
    }
    Request data = post_recv(world_peer, buf, len);
    req->len = kCheck;
    data->check = std::move(req);
    return data;
}

void Comm::verify_arrived_checks()
{
    for (PendingTransfer *t : watched_)
        if (!t->verified && t->raw.status == DTP_OK)
            verify_check(*t);
}

void Comm::verify_check(PendingTransfer &t)
{
    t.verified = true;
    CallCheck theirs;
    if (t.raw.bytes >= sizeof theirs) {
        std::memcpy(&theirs, t.staging.get(), sizeof theirs);
        if (call_checks_agree(theirs, *check_))
            return; // the common case: no message to build
    }
    const std::string what = cat(collective_, " '", check_name_, "'");
    if (t.raw.bytes < sizeof(CallCheck))
        abort_and_throw(DT_ERR_MISMATCH, call_check_missing(what, global(rank_), t.peer,
                                                            t.raw.bytes));
    std::string mismatch = call_check_mismatch(what, global(rank_), *check_, t.peer, theirs);
    if (mismatch.empty()) // agreeing fields compare equal above: a corrupt check
        mismatch = cat(what, ": rank ", t.peer, " sent a malformed call check");
    abort_and_throw(DT_ERR_MISMATCH, std::move(mismatch));
}

void Comm::progress_once(int32_t timeout_ms)
{
    set_last_error("");
    int32_t rc = transport_.ops().progress(transport_.instance(), timeout_ms);
    if (rc >= 0)
        return;
    verify_arrived_checks(); // a disagreement explains the failure better, if it is one
    std::string detail = *last_error() != '\0' ? std::string(last_error()) : status_text(rc);
    abort_and_throw(as_error(rc), cat(collective_, ": transport '", transport_.name(),
                                      "' failed: ", detail));
}

bool Comm::test(Request &req)
{
    if (!req)
        return true;
    if (req->check && !test(req->check))
        return false;
    const bool polled = req->raw.status == DTP_INPROGRESS;
    if (polled)
        progress_once(0);
    if (req->raw.status == DTP_INPROGRESS)
        return false;
    finish(req, polled);
    return true;
}

void Comm::finish(Request &req, bool completed_by_last_progress)
{
    // A received check is read before anything else about the message: it names what
    // the ranks disagree on, where a size alone would not.
    if (req->is_recv && req->staging) {
        std::erase(watched_, req.get());
        if (req->raw.status == DTP_OK && !req->verified)
            verify_check(*req);
    }
    if (req->raw.status != DTP_OK || (req->is_recv && req->raw.bytes != req->len)) {
        // A request that failed in the progress call just made comes with the plugin's
        // message (set_error during that call: "lost connection to rank N ...", a size
        // mismatch); one that failed earlier has only its status, since later calls
        // cleared or replaced the message.
        if (!completed_by_last_progress)
            set_last_error("");
        fail(*req);
    }
    if (req->out != nullptr && req->len > sizeof(CallCheck))
        std::memcpy(req->out, req->staging.get() + sizeof(CallCheck),
                    req->len - sizeof(CallCheck));
    req.reset();
}

void Comm::wait(Request &req)
{
    if (!req)
        return;
    if (req->check)
        wait(req->check); // the check is verified before the data counts
    // The loops end right after the progress call that completed req.
    const bool polled = req->raw.status == DTP_INPROGRESS;
    const auto spin_end = Clock::now() + kSpin;
    while (req->raw.status == DTP_INPROGRESS && Clock::now() < spin_end)
        progress_once(0);
    while (req->raw.status == DTP_INPROGRESS) {
        auto now = Clock::now();
        if (now >= deadline_)
            fail(*req);
        if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed))
            cancelled(*req);
        check_departure(*req);
        // A check that arrived for another receive of this call is read now: waiting
        // here for a message that a disagreeing rank will never send must not keep this
        // rank from seeing the disagreement.
        if (!watched_.empty())
            verify_arrived_checks();
        int32_t ms = kBlockMs;
        if (deadline_ != Clock::time_point::max()) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - now).count();
            if (left < ms)
                ms = static_cast<int32_t>(left);
        }
        progress_once(ms);
    }
    finish(req, polled);
}

void Comm::send(int peer, const void *buf, size_t len)
{
    Request req = isend(peer, buf, len);
    wait(req);
}

void Comm::recv(int peer, void *buf, size_t len)
{
    Request req = irecv(peer, buf, len);
    wait(req);
}

void Comm::sendrecv(int send_peer, const void *sendbuf, size_t send_len, int recv_peer,
                    void *recvbuf, size_t recv_len)
{
    // Receive first so a transport that needs a posted receive for rendezvous sends
    // never sees both sides sending into nothing.
    Request r = irecv(recv_peer, recvbuf, recv_len);
    Request s = isend(send_peer, sendbuf, send_len);
    wait(r);
    wait(s);
}

void Comm::cancelled(const PendingTransfer &t)
{
    if (t.peer < 0)
        abort_and_throw(DT_ERR_ABORTED, cat(collective_, ": aborted on this rank while "
                                            "waiting for the native ", collective_,
                                            " (the context was aborted)"));
    abort_and_throw(DT_ERR_ABORTED, cat(collective_, ": aborted on this rank while waiting to ",
                                        t.is_recv ? "receive from" : "send to", " rank ",
                                        t.peer, " (the context was aborted)"));
}

void Comm::check_departure(const PendingTransfer &t)
{
    if (!departed_)
        return;
    if (t.peer < 0) {
        check_departures_of_members();
        return;
    }
    Departure left = departed_(t.peer);
    // A lost connection fails the transfer itself, with the transport's own message.
    if (left.notice.empty() || left.lost)
        return;
    abort_and_throw(left.status, cat(collective_, ": rank ", t.peer, " ", left.verb(),
                                     " while this rank waited to ",
                                     t.is_recv ? "receive from" : "send to", " it: ",
                                     left.notice));
}

void Comm::check_departures_of_members()
{
    // Every member takes part in a native collective, and the transport may never finish
    // it once one has failed (MPI waits on). A member that left cleanly did its part, and
    // may have left before this rank's part completed. Transport::abort in
    // abort_and_throw hands the request back to the plugin, which leaves it to MPI and
    // calls MPI no more (plugins/transport/mpi), so nothing writes into the buffers later.
    for (int r = 0; r < size_; ++r) {
        if (r == rank_)
            continue;
        Departure left = departed_(global(r));
        if (left.notice.empty() || left.clean)
            continue;
        abort_and_throw(left.status, cat(collective_, ": rank ", global(r), " ", left.verb(),
                                         " while this rank waited for the native ",
                                         collective_, " of transport '", transport_.name(),
                                         "': ", left.notice));
    }
}

Comm::Departure Comm::poll_departure(int world_peer)
{
    progress_once(0);
    if (!departed_)
        return {};
    Departure left = departed_(world_peer);
    if (left.lost)
        return {};
    return left;
}

void Comm::fail_departed(int world_peer, const Departure &left)
{
    abort_and_throw(left.status, cat(collective_, ": rank ", world_peer, " ", left.verb(),
                                     " while this rank waited for it: ",
                                     left.notice));
}

void Comm::fail(const PendingTransfer &t)
{
    if (t.peer < 0)
        fail_native(t);
    // A peer that disagrees on the count sends more than a receive holds, which the
    // transport refuses, at once where the message was already there (tcp fails the
    // irecv call itself): its check, which arrived before, names the disagreement.
    verify_arrived_checks();
    const char *what = t.is_recv ? "receive from" : "send to";
    int32_t status = t.raw.status;
    dt_status_t code;
    std::string message;
    if (status == DTP_INPROGRESS) {
        code = DT_ERR_TIMEOUT;
        message = cat(collective_, ": timed out waiting to ", what, " rank ", t.peer,
                      " (DISTTRAIN_TIMEOUT passed); rank ", t.peer,
                      " may be stuck, dead or not calling this collective: check its log, "
                      "or raise DISTTRAIN_TIMEOUT if the job is only slow");
    } else if (status == DTP_OK) {
        code = DT_ERR_MISMATCH;
        message = cat(collective_, ": received ", t.raw.bytes, " bytes from rank ", t.peer,
                      " but expected ", t.len,
                      "; the ranks disagree on the count or dtype of this collective");
    } else {
        code = as_error(status);
        // The plugin's own message is there only when the failing call just returned
        // (the host's set_error wrote it); a request that failed later has its status.
        std::string detail = *last_error() != '\0'
                                 ? std::string(last_error())
                                 : cat("rank ", t.peer, ": ", status_text(status));
        message = cat(collective_, ": ", what, " rank ", t.peer, " failed: ", detail);
    }
    abort_and_throw(code, std::move(message));
}

void Comm::fail_native(const PendingTransfer &t)
{
    const std::string what = cat("the native ", collective_, " of transport '",
                                 transport_.name(), "'");
    if (t.raw.status == DTP_INPROGRESS)
        abort_and_throw(DT_ERR_TIMEOUT,
                        cat(collective_, ": timed out waiting for ", what,
                            " (DISTTRAIN_TIMEOUT passed); a rank may be stuck, dead or not "
                            "calling this collective: check the logs, or raise "
                            "DISTTRAIN_TIMEOUT if the job is only slow"));
    std::string detail = *last_error() != '\0' ? std::string(last_error())
                                               : status_text(t.raw.status);
    abort_and_throw(as_error(t.raw.status), cat(collective_, ": ", what, " failed: ", detail));
}

void Comm::abort_and_throw(dt_status_t code, std::string message)
{
    watched_.clear(); // their requests go with the unwinding collective
    if (on_failure_) {
        FailureHook hook = std::move(on_failure_); // once, even if the hook fails too
        hook(code, message);
    }
    DT_LOG(debug, "algorithms", message, "; aborting transport '", transport_.name(), "'");
    transport_.abort();
    throw Error(code, std::move(message));
}

} // namespace dt::algo

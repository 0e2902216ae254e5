/* SPDX-License-Identifier: Apache-2.0 */
// Comm: the point-to-point view that collective algorithms are written against. One Comm
// serves one collective call: it carries the tag of that call (messages of different
// calls never match each other), the deadline, and the rank/size of the group.
//
// Algorithms post sends and receives, then wait. wait() drives the transport's progress
// and throws dt::Error when a request fails (naming the peer) or the deadline passes.
// Before it throws, it aborts the transport (Transport::abort): that fails every request
// the plugin still holds while their structs and buffers are alive, and tells the peers
// this rank left so they fail fast. A failed collective therefore ends the transport.
#pragma once

#include "algorithms/staging.h"
#include "plugin/transport.h"
#include "runtime/call_check.h"

#include <disttrain/disttrain.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <cstdint>
#include <memory>
#include <vector>

namespace dt::algo {

using Clock = std::chrono::steady_clock;

// A posted send or receive. Heap-allocated so the plugin's view of it never moves.
// peer -1: a native collective of the transport over the whole job (routing/path_native.cc).
struct PendingTransfer {
    dt_transport_request_t raw{};
    int peer = -1;
    bool is_recv = false;
    size_t len = 0;
    // The call check (ordered mode) on the first transfer of a call with a peer. Inline:
    // the message is `staging` (check, then the data), and a receive copies the data out
    // to `out` once the check agrees. Separate: `check` is the message just before.
    Staging staging;
    void *out = nullptr;
    std::unique_ptr<PendingTransfer> check;
    bool verified = false; // a received check that was compared already
};
using Request = std::unique_ptr<PendingTransfer>;

// Which peers (group ranks) this call already sent to, or received from.
class PeerSet {
public:
    // Adds peer; true when it was not in the set yet.
    bool insert(int peer)
    {
        if (peer < 64) {
            uint64_t bit = uint64_t{1} << peer;
            bool fresh = (small_ & bit) == 0;
            small_ |= bit;
            return fresh;
        }
        size_t i = static_cast<size_t>(peer) / 64 - 1;
        if (big_.size() <= i)
            big_.resize(i + 1);
        uint64_t bit = uint64_t{1} << (peer % 64);
        bool fresh = (big_[i] & bit) == 0;
        big_[i] |= bit;
        return fresh;
    }

private:
    uint64_t small_ = 0;
    std::vector<uint64_t> big_;
};

class Comm {
public:
    // deadline: time_point::max() for none. collective: a short name for messages.
    Comm(Transport &transport, int rank, int size, uint64_t tag, Clock::time_point deadline,
         const char *collective = "collective");

    // While waiting, a cancel flag that turns true fails the wait with DT_ERR_ABORTED
    // (dt_context_abort from another thread). Null: none. The flag must outlive the Comm.
    void set_cancel(const std::atomic<bool> *cancel) { cancel_ = cancel; }

    int rank() const { return rank_; }
    int size() const { return size_; }
    uint64_t tag() const { return tag_; }
    // The transport this call runs on (runtime/native.cc offers it native collectives).
    Transport &transport() const { return transport_; }

    Request isend(int peer, const void *buf, size_t len);
    Request irecv(int peer, void *buf, size_t len);

    // Blocks until req completes; a receive that got fewer bytes than posted is a
    // DT_ERR_MISMATCH error (the ranks disagree on the count). Null req: no-op.
    void wait(Request &req);
    // True when req has completed (throws if it failed). Polls the transport once.
    bool test(Request &req);

    // Ordered mode: the call's check travels with this call's first transfer to and from
    // each peer, and a receive whose check disagrees fails with DT_ERR_MISMATCH before
    // its data is used (runtime/call_check.h). name: the operation's, for messages. Both
    // must outlive the Comm. Null: no check (the engine negotiated the call).
    void set_check(const CallCheck *check, const char *name)
    {
        check_ = check;
        check_name_ = name;
    }
    const CallCheck *check() const { return check_; }
    const char *check_name() const { return check_name_; }

    // For a group of ranks: members[r] is the transport rank of group rank r (rank and
    // size given to the constructor are the group's). The vector must outlive the Comm.
    void set_members(const std::vector<int> *members) { members_ = members; }

    // While waiting on a peer: the notice it sent when it left the job (text empty while
    // it is in). A peer that left fails the wait at once, not at the deadline or when
    // its connection finally drops; its data sent before the notice still completes the
    // wait, since the notice follows it on the same connection. The status is the one
    // this rank fails with: DT_ERR_PEER_LOST, or DT_ERR_MISMATCH when the peer left
    // because the ranks disagree on a call. A native collective (peer -1) involves every
    // member: any member's notice but a clean exit's, or its lost connection, fails the
    // wait for it.
    struct Departure {
        dt_status_t status = DT_ERR_PEER_LOST;
        std::string notice;
        // The status the peer's notice carries: why its context ended (DT_ERR_PEER_LOST
        // for a clean exit or a notice that says no more).
        dt_status_t cause = DT_ERR_PEER_LOST;
        // No notice came: the connection to the peer failed (notice says how). A wait on
        // that peer's own transfer learns it from the transfer, so only the wait for a
        // native collective, whose transport may never report it, acts on it.
        bool lost = false;
        // The peer destroyed its context with every call done (its notice said so): it
        // took its part in a native collective this rank may still be finishing.
        bool clean = false;
        // What the peer did, for messages. It left the job (destroyed or aborted its
        // context, or lost a peer of its own and passes that on), or it is alive with a
        // broken context: it found that the ranks' calls disagree (DT_ERR_MISMATCH), or
        // it hit an error of its own (a device copy that failed, a time-out); "left the
        // job" would mislead then.
        const char *verb() const
        {
            if (lost)
                return "was lost";
            if (cause == DT_ERR_MISMATCH)
                return "found the ranks' calls disagree and stopped";
            if (cause == DT_ERR_PEER_LOST || cause == DT_ERR_ABORTED)
                return "left the job";
            return "hit an error and stopped";
        }
    };
    using DepartureCheck = std::function<Departure(int world_rank)>;
    void set_departure_check(DepartureCheck check) { departed_ = std::move(check); }

    // Called with the error just before a failure aborts the transport: the last moment
    // the transport can still carry a word to the peers (the engine tells them why).
    using FailureHook = std::function<void(dt_status_t, const std::string &)>;
    void set_failure_hook(FailureHook hook) { on_failure_ = std::move(hook); }

    // Blocking helpers.
    void send(int peer, const void *buf, size_t len);
    void recv(int peer, void *buf, size_t len);
    // Posts both, waits both: the deadlock-free exchange of pairwise algorithms.
    void sendrecv(int send_peer, const void *sendbuf, size_t send_len, int recv_peer,
                  void *recvbuf, size_t recv_len);

    // What this call runs under, for paths that bypass the transport (core/shm).
    Clock::time_point deadline() const { return deadline_; }
    const std::atomic<bool> *cancel_flag() const { return cancel_; }
    const std::vector<int> *members() const { return members_; }
    // The transport rank of group rank peer.
    int world_rank(int peer) const { return global(peer); }

    // A Comm among some transport ranks (world_members, which must outlive it; this
    // rank is world_members[rank]) with this call's tag, deadline, cancel flag and
    // failure hook: the cross-host step of a hierarchical collective.
    Comm subset(int rank, const std::vector<int> *world_members) const
    {
        Comm c(transport_, rank, static_cast<int>(world_members->size()), tag_, deadline_,
               collective_);
        c.cancel_ = cancel_;
        c.on_failure_ = on_failure_;
        c.departed_ = departed_;
        c.members_ = world_members;
        c.check_ = check_;
        c.check_name_ = check_name_;
        return c;
    }

    // For paths that wait outside the transport (core/shm), between sleeps: drives the
    // transport once without blocking, so that its control traffic still arrives (a
    // peer's notice that it left, a closed connection), and returns world rank
    // world_peer's notice (empty while it is in, or when only its connection failed:
    // shared memory sees a dead peer itself). The caller looks at the notice before its
    // flag: a peer that did its part and then left set the flag before sending it.
    Departure poll_departure(int world_peer);
    // Fails this call as a wait on the transport would when the peer has left the job.
    [[noreturn]] void fail_departed(int world_peer, const Departure &left);

    // Fails this call as a failed transfer does (failure hook, transport abort), then
    // throws: for failures seen outside the transport (a peer dead in shared memory).
    [[noreturn]] void fail_collective(dt_status_t code, std::string message)
    {
        abort_and_throw(code, std::move(message));
    }

private:
    Request post_send(int world_peer, const void *buf, size_t len);
    Request post_recv(int world_peer, void *buf, size_t len);
    Request checked_send(int world_peer, const void *buf, size_t len);
    Request checked_recv(int world_peer, void *buf, size_t len);
    // A received call check (first bytes of t's message) against this call's.
    void verify_check(PendingTransfer &t);
    // Verifies every watched check that has arrived (while waiting for something else).
    void verify_arrived_checks();
    void progress_once(int32_t timeout_ms);
    // Throws if the completed req failed; with completed_by_last_progress, keeping the
    // plugin's message from that progress call. Then releases req.
    void finish(Request &req, bool completed_by_last_progress);
    [[noreturn]] void fail(const PendingTransfer &t);
    [[noreturn]] void fail_native(const PendingTransfer &t);
    [[noreturn]] void abort_and_throw(dt_status_t code, std::string message);
    [[noreturn]] void cancelled(const PendingTransfer &t);
    void check_departure(const PendingTransfer &t);
    // For a native collective: the first member that left or was lost fails the wait.
    void check_departures_of_members();

    Transport &transport_;
    int rank_;
    int size_;
    uint64_t tag_;
    Clock::time_point deadline_;
    const char *collective_;
    const std::atomic<bool> *cancel_ = nullptr;
    FailureHook on_failure_;
    DepartureCheck departed_;
    const std::vector<int> *members_ = nullptr;
    const CallCheck *check_ = nullptr;
    const char *check_name_ = "";
    PeerSet checked_sends_;
    PeerSet checked_recvs_;
    std::vector<PendingTransfer *> watched_; // checked receives not finished yet

    int global(int peer) const { return members_ != nullptr ? (*members_)[peer] : peer; }
};

} // namespace dt::algo

/* SPDX-License-Identifier: Apache-2.0 */
// The background engine of a context. Callers enqueue named operations from any thread,
// in any order; one engine thread per context wakes every DISTTRAIN_CYCLE_TIME_MS (at
// once when the queue holds a fusion buffer's worth or a caller waits; less often while
// no rank has work, see idle_cycles_, or this rank has none, see quiet_), agrees with the
// other ranks which operations are ready everywhere (negotiation: a MIN allreduce of one
// byte per cached operation, plus a round trip through the coordinator on rank 0 for new
// ones), fuses ready allreduces into one buffer up to DISTTRAIN_FUSION_THRESHOLD bytes and
// runs them.
//
// Failures never hang: every exchange has the DISTTRAIN_TIMEOUT deadline, a lost peer is
// seen through a control receive posted to every peer, and the first error breaks the
// context: every pending and later operation fails with it.
#pragma once

#include "algorithms/comm.h"
#include "plugin/transport.h"
#include "routing/router.h"
#include "runtime/config.h"
#include "runtime/coordinator.h"
#include "runtime/error.h"
#include "runtime/operation.h"
#include "runtime/response_cache.h"
#include "telemetry/timeline.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace dt {

namespace algo {
class Comm;
}

class Engine {
public:
    using Clock = std::chrono::steady_clock;

    // router: decides how each collective runs; timeline: where phases go (null: none).
    // Both are the context's and outlive the engine.
    Engine(Transport &transport, const ContextConfig &config, routing::Router &router,
           Timeline *timeline);
    // Runs this rank's pending operations to completion (each bounded by the timeout),
    // tells the peers it leaves, then stops the thread.
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Thread safe. A broken or aborted context completes op at once with its error. In
    // ordered mode a blocking operation with nothing queued ahead runs on this thread.
    void submit(std::shared_ptr<Operation> op);

    // Fails every pending and later operation with DT_ERR_ABORTED and tells peers.
    void abort();
    // Stops the engine thread (as the destructor does) and returns the peers whose
    // connection failed, as far as this rank saw: what a re-form needs to know.
    std::vector<int> stop();

    // Makes a group's members known (world ranks); before any of its operations. False,
    // and nothing changed, when another group already has the id.
    bool register_group(uint32_t id, std::vector<int> members);

    // The error that broke the context, if any.
    std::optional<std::pair<dt_status_t, std::string>> error() const;

private:
    struct Pending {
        std::shared_ptr<Operation> op;
        Signature sig;
        Clock::time_point submitted;
        bool reported = false; // sent to the coordinator
        // The first negotiation cycle that saw it: its wait for the other ranks counts from
        // here (Record::waited_us), not from a submission made while the engine was busy.
        std::optional<Clock::time_point> first_cycle;
    };
    // A ready operation as every rank runs it; op is null on a rank that takes part
    // without having submitted it (a joined rank contributes the identity).
    struct Ready {
        std::string name;
        Signature sig;
        std::shared_ptr<Operation> op;
        Clock::time_point submitted;
        Clock::time_point ready_at;
        bool member = true; // false: not in the group; the rank only keeps step
    };
    struct ControlRecv {
        dt_transport_request_t raw{};
        char buf[1024];
    };

    void loop();
    bool wait_for_work();
    // Nothing can become ready before this rank's caller submits (see quiet_).
    bool waits_for_own_submission() const;
    Clock::duration quiet_tick() const;
    // Ordered mode (engine_ordered.cc): no negotiation, submission order.
    void ordered_loop();
    void run_ordered(Operation &op);
    bool claim_transport(std::unique_lock<std::mutex> &lock);
    void release_transport();
    void admit(std::deque<std::shared_ptr<Operation>> &incoming);
    void cycle();
    // The cycle's exchange of cache states (a MIN allreduce), on shared memory when every
    // rank runs on this host.
    void agree(algo::Comm &c, std::vector<uint8_t> &state);
    // How long the engine sleeps before the next cycle unless woken (idle_cycles_).
    Clock::duration next_tick() const;
    std::vector<uint8_t> cache_state(Clock::time_point now);
    void slow_path(std::vector<Ready> &ready, Clock::time_point now);
    void apply(const ResponseList &list, std::vector<Ready> &ready, Clock::time_point now);
    void execute(std::vector<Ready> &ready);
    size_t run_fused(std::vector<Ready> &ready, size_t first);
    void run_one(Ready &r);
    bool run_device_batch(std::vector<Ready> &ready, size_t first, size_t last, algo::Comm &c,
                          int divisor); // engine_execute.cc
    void complete(Ready &r, dt_status_t status, const std::string &message);

    // A Comm for one exchange; with members, among those world ranks only.
    algo::Comm comm(uint64_t tag, const char *what, const std::vector<int> *members = nullptr);
    // Each group numbers its own operations: in ordered mode only a group's members see
    // its operations, so one job-wide counter would drift apart between ranks. The low
    // kGroupTagBits hold the group (ids wrap after 4096 groups), the rest the sequence.
    uint64_t next_op_tag(uint32_t group)
    {
        uint64_t seq = group == 0 ? op_seq_++ : group_seq_[group]++;
        uint64_t low = (seq << kGroupTagBits) | (group & ((1u << kGroupTagBits) - 1));
        return kOpTagBase + (low & (kOpTagBase - 1));
    }
    // The per-group call number a tag from next_op_tag holds (for messages).
    static uint64_t call_number(uint64_t tag) { return (tag - kOpTagBase) >> kGroupTagBits; }
    bool joined_mode() const { return !joined_.empty(); }
    // Members (world ranks) of a group; group 0 is every rank.
    std::vector<int> members(uint32_t group) const;
    bool is_member(uint32_t group) const;
    int group_rank(uint32_t group) const;
    int active_ranks() const { return size_ - static_cast<int>(joined_.size()); }

    void post_control_receives();
    void check_control();
    // The notice of a peer that left the job; its text is "" while the peer is in (or
    // lost without one).
    algo::Comm::Departure departure_notice(int peer) const;
    // Clean exit: waits (bounded) until every peer has left too, see engine_control.cc.
    void await_peers_leaving();
    std::vector<int> failed_control_receives() const;
    // The first notice check_control would name says its sender completed every call.
    bool first_notice_clean() const;
    void note_lost_peers(); // adds failed_control_receives() to lost_peers_
    // The best explanation of a failure: a peer's notice or a lost connection seen on
    // the control receives, else the error itself.
    std::pair<dt_status_t, std::string> root_cause(dt_status_t status,
                                                   const std::string &message);
    // departure: the cause is only that a peer left cleanly (PeerLeft), so this rank's
    // transport is healthy and its exit may still be graceful towards the others.
    void break_context(dt_status_t status, const std::string &message,
                       bool departure = false);
    bool departure_only() const;
    void notify_peers(dt_status_t status, const std::string &message);
    void fail_all(dt_status_t status, const std::string &message);

    static constexpr uint64_t kOpTagBase = uint64_t(1) << 40;
    static constexpr unsigned kGroupTagBits = 12;
    static constexpr uint64_t kNegotiationTagBase = uint64_t(2) << 40;
    static constexpr uint64_t kControlTag = uint64_t(3) << 40;
    // How often a rank whose caller is blocked looks whether a peer on this host has
    // started the next cycle (wait_for_work): a wake-up of an otherwise idle thread.
    static constexpr auto kPeerWatch = std::chrono::microseconds(50);

    Transport &transport_;
    routing::Router &router_;
    const int rank_;
    const int size_;
    const std::chrono::milliseconds timeout_;
    const std::chrono::milliseconds cycle_time_;
    const size_t fusion_threshold_;
    const std::chrono::milliseconds stall_warn_;
    const bool ordered_asked_; // DISTTRAIN_ORDERED=1 (or the context parameter)
    // Ordered mode: asked for, or a job of one rank, which has nobody to negotiate with
    // (a negotiation cycle would only add a thread handoff and a tick to every call).
    const bool ordered_;

    // Shared with callers (and through wakeup_ with the operations, see EngineWakeup).
    std::shared_ptr<EngineWakeup> wakeup_ = std::make_shared<EngineWakeup>();
    std::mutex &mutex_ = wakeup_->mutex;
    std::condition_variable &cv_ = wakeup_->cv;
    std::deque<std::shared_ptr<Operation>> intake_;
    size_t intake_bytes_ = 0;
    bool stopping_ = false;
    bool idle_ = false; // the engine sleeps out an idle tick: a submission wakes it
    // The engine sleeps a quiet tick (kQuietTickCycles ticks; waits_for_own_submission);
    // a submission cuts it short where an ordinary tick would have ended.
    bool quiet_ = false;
    // The last cycle agreed through shared memory (agree): every rank runs on this host.
    bool negotiates_on_this_host_ = false;
    // Whoever drives the transport holds this (the engine thread, or in ordered mode a
    // caller running its blocking operation); true until the control receives are up.
    bool transport_busy_ = true;
    std::optional<std::pair<dt_status_t, std::string>> error_;
    std::mutex lost_mutex_;
    std::vector<int> lost_peers_; // noted when a collective fails and as the engine leaves
    bool departure_only_ = false; // error_ came from a peer's clean exit (break_context)
    // A call of this rank failed or was refused since the context broke: its notice must
    // not tell the peers that it did its part of every collective it began.
    std::atomic<bool> calls_failed_{false};
    std::atomic<bool> notified_{false}; // notify_peers has sent this rank's notice
    std::atomic<bool> cancel_{false};
    mutable std::mutex groups_mutex_;
    std::unordered_map<uint32_t, std::vector<int>> groups_;
    // Some registered group leaves this rank out (register_group keeps it current).
    std::atomic<bool> outside_a_group_{false};

    // Engine thread only.
    std::unordered_map<std::string, Pending> pending_; // by key: name, or name@groupN
    ResponseCache cache_;
    std::unique_ptr<Coordinator> coordinator_; // rank 0
    std::vector<int> joined_;                  // as the coordinator last said
    std::shared_ptr<Operation> join_op_;       // this rank's join in flight
    bool join_reported_ = false;
    uint64_t cycle_seq_ = 0;
    // Consecutive cycles in which no rank had anything pending (every rank counts the
    // same, from the negotiation's last byte). While it grows, the tick doubles up to
    // 2^kIdleBackoffDoublings x DISTTRAIN_CYCLE_TIME_MS, so an idle job (a forward pass)
    // negotiates a few times instead of once a millisecond; and the first submission
    // then wakes the engine at once. Ranks that got no work still come within one tick,
    // and since every rank ends a cycle at about the same moment, their ticks line up.
    uint64_t idle_cycles_ = 0;
    static constexpr unsigned kIdleBackoffDoublings = 3;
    // A rank with nothing pending, in every group, cannot help any operation become
    // ready by negotiating: every pending operation anywhere waits for its submission,
    // which wakes the engine. So it negotiates only this often (for the coordinator's
    // stall reports and time-outs), instead of every tick while its peers wait: on a
    // CPU job the straggler's own core would pay for every cycle, and a cycle it ran just
    // before its caller submitted would leave the waiting peers a tick behind.
    static constexpr unsigned kQuietTickCycles = 64;
    static constexpr std::chrono::milliseconds kQuietTickMax{100};
    // Cost of negotiation with nothing to do (a warm cache, no news), logged at exit.
    uint64_t empty_cycles_ = 0;
    std::chrono::nanoseconds empty_cycle_time_{0};
    uint64_t op_seq_ = 0;                               // group 0's operations
    std::unordered_map<uint32_t, uint64_t> group_seq_; // every other group's
    Clock::time_point last_coordination_{};
    std::vector<uint8_t> fusion_buffer_;
    std::vector<std::unique_ptr<ControlRecv>> control_;
    Timeline *const timeline_;
    std::thread thread_;
};

} // namespace dt

/* SPDX-License-Identifier: Apache-2.0 */
// Team: the ranks of one shared-memory collective and the handoff between them. Each
// participant publishes into its own segment and reads the others'; nothing is ever
// written into a peer's memory, so a handoff is a release store of a flag by the owner
// and acquire loads by the readers:
//
//   begin()         wait until every peer acknowledged reading this rank's segment in
//                   the last call that involved it (acks live in the peer's segment and
//                   count the calls the two shared, so an ack is "done up to call n");
//                   begin_inline(), for a call that publishes its tag line and writes
//                   nothing else: only the ack of the call that last wrote that line
//   publish(tag)    the tag line says "my data for call <tag> is in place"; tiny
//                   messages ride in the same cache line (publish_inline)
//   post(counter)   pipelined calls count pieces in posted / reduced / done
//   end()           acknowledge every peer's segment, remember what the peers owe us
//
// Waiting spins briefly (not at all when the host runs more ranks than cores), then
// sleeps on a futex in the peer's segment, which the peer wakes when it updates a flag
// and sees a sleeper: a loaded or oversubscribed host hands the core straight to the
// rank being waited for. Sleeps last at most 1 ms, so the deadline, the context's cancel
// flag and the peer's liveness are checked, and a dead or failed rank turns into an
// error that names it.
#pragma once

#include "algorithms/comm.h"
#include "shm/domain.h"

#include <disttrain/disttrain.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>

#include <sched.h>

namespace dt::shm {

using Clock = std::chrono::steady_clock;
using Counter = Line Control::*;

struct TeamArgs {
    const int *locals = nullptr; // local index of each participant, in group-rank order
    int size = 0;                // participants
    int rank = 0;                // this rank's place among them
    uint64_t tag = 0;            // the call's tag: the same on every participant, > 0,
                                 // unlike the tags of this rank's recent calls
    Clock::time_point deadline = Clock::time_point::max();
    const std::atomic<bool> *cancel = nullptr;
    algo::Comm *comm = nullptr;  // failures go through its failure hook; may be null
    const char *what = "shm collective";
    // Ordered mode: this call's check, compared with every published peer's (null: a
    // negotiated call), and the operation's name for the message.
    const CallCheck *check = nullptr;
    const char *name = "";
};

class Team {
public:
    Team(Domain &domain, const TeamArgs &args);

    int size() const { return args_.size; }
    int rank() const { return args_.rank; }
    uint64_t tag() const { return args_.tag; }
    // Whether this call carries a call check (ordered mode) that wait_published compares.
    bool checked() const { return args_.check != nullptr; }
    Domain &domain() { return dom_; }
    const char *what() const { return args_.what; }

    std::byte *my_data() { return dom_.my_data(); }
    const std::byte *data(int member) const { return dom_.data(args_.locals[member]); }
    size_t data_bytes() const { return dom_.data_bytes(); }

    // Waits for the acks the peers owe this rank; with counters (the pipelined paths),
    // resets posted / reduced / done, which peers read once the tag is published.
    void begin(bool counters = true);
    // For a call that writes only its tag line (payload included) and at most its
    // region of the data area (my_region): waits for the acks of the last call that
    // wrote the line or the region this one writes (layout.h), not of the last call.
    void begin_confined();
    // Half the data area, the one that goes with this call's tag line: back-to-back
    // small calls alternate between the two halves as they do between the tag lines.
    size_t region_bytes() const { return dom_.data_bytes() / 2 & ~size_t(63); }
    std::byte *my_region() { return dom_.my_data() + line_ * region_bytes(); }
    // The region member published in, given the tag line wait_published returned.
    const std::byte *region(int member, const TagLine &line) const
    {
        const size_t index = &line == &control(member).tags[0] ? 0 : 1;
        return dom_.data(args_.locals[member]) + index * region_bytes();
    }
    void publish()
    {
        Control &me = dom_.mine();
        if (args_.check != nullptr)
            call_line(me, dom_.local_size()).call = *args_.check;
        TagLine &line = me.tags[line_];
        line.check.store(check_word_, std::memory_order_relaxed);
        line.tag.store(args_.tag, std::memory_order_release);
        // Peers asleep on this tag are woken before this rank waits for anything
        // (wait_for) or at end(), not here: the fence of the wake-up would stall until
        // the tag's cache line had left for the peers, a round trip this rank can spend
        // reading theirs instead.
        wake_pending_ = true;
    }
    void publish_inline(const void *payload, size_t bytes)
    {
        std::memcpy(dom_.mine().tags[line_].payload, payload, bytes);
        publish();
    }
    // Waits until member has published this call and checks that it runs the same call
    // (ordered mode); returns its tag line (inline payload).
    const TagLine &wait_published(int member);

    void post(Counter counter, uint64_t value)
    {
        (dom_.mine().*counter).value.store(value, std::memory_order_release);
        notify();
    }
    void wait_counter(int member, Counter counter, uint64_t at_least);
    // A member's counter as it is now (no wait), for work that need not wait for it.
    uint64_t counter(int member, Counter counter) const
    {
        return (control(member).*counter).value.load(std::memory_order_acquire);
    }

    // Single-copy reads (allreduce_cma.cc): whether every member could read all peers at
    // attach time (the same answer on every member), and the members' processes.
    bool single_copy() const
    {
        for (int m = 0; m < args_.size; ++m)
            if (!dom_.cma(args_.locals[m]))
                return false;
        return true;
    }
    int pid(int member) const { return dom_.pid(args_.locals[member]); }
    int world_rank(int member) const { return dom_.world_rank_of(args_.locals[member]); }
    bool alive(int member) const { return dom_.alive(args_.locals[member]); }
    // More ranks on this host than CPUs: ranks take turns on a core.
    bool oversubscribed() const { return oversubscribed_; }

    // Acknowledges every peer's segment (this rank will not read them again for this
    // call) and records that each peer owes this rank the same.
    void end();

    [[noreturn]] void fail(dt_status_t status, const std::string &message);

private:
    // member published a check other than this call's: fails with DT_ERR_MISMATCH.
    [[noreturn]] void check_failed(int member, uint64_t theirs);
    // Waits on something of the rank with local index `local` (named in errors).
    template <typename Ready>
    void wait_for(int local, Ready &&ready);
    template <typename Ready>
    void sleep_on(int local, Ready &ready);
    // Throws when the wait cannot end well: state, alive and the peer's notice on the
    // transport (left) were read before the flag.
    void check(int local, Clock::time_point now, uint32_t state, bool alive,
               algo::Comm::Departure left);
    // After an update of this rank's flags: wakes the peers asleep on it, if any. The
    // fence orders the update before the look at the peers' sleeping lines (Dekker, with
    // sleep_on); the futex word moves only when there is a sleeper to wake.
    void notify()
    {
        wake_pending_ = false;
        WakeLine &wake = dom_.mine().wake;
        const int cpu = ::sched_getcpu();
        if (wake.cpu.load(std::memory_order_relaxed) != cpu) // peers poll this line
            wake.cpu.store(cpu, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const uint64_t me = static_cast<uint64_t>(dom_.local_rank()) + 1;
        for (int local = 0; local < dom_.local_size(); ++local)
            if (dom_.control(local).sleeping.value.load(std::memory_order_seq_cst) == me) {
                wake.gen.fetch_add(1, std::memory_order_seq_cst);
                return wake_sleepers();
            }
    }
    // The wake-up publish() left for later, before this rank waits.
    void flush_wake()
    {
        if (wake_pending_)
            notify();
    }
    void wake_sleepers();
    const Control &control(int member) const { return dom_.control(args_.locals[member]); }

    Domain &dom_;
    TeamArgs args_;
    uint64_t check_word_; // call_check_hash of args_.check, 0 without one
    int line_;            // the tag line this call publishes in (Domain::next_line)
    bool wake_pending_ = false; // published, peers not yet looked at for sleepers
    bool confined_ = false;     // begin_confined: only the tag line and region line_
    bool oversubscribed_;
};

} // namespace dt::shm

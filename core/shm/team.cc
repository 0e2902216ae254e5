// SPDX-License-Identifier: Apache-2.0
#include "shm/team.h"

#include "algorithms/comm.h"
#include "runtime/error.h"

#include <algorithm>
#include <thread>

#include <climits>

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace dt::shm {

namespace {

// Spinning before sleeping (for TuningOverrides::spin, DISTTRAIN_SHM_SPIN_US). With a
// core per rank, a peer a few microseconds behind is the common case and a futex round
// trip (sleep + wake) costs more than that; with more ranks than cores, spinning only
// keeps the rank we wait for off the core.
constexpr uint32_t kSpinOversubscribed = 16; // polls
// Then, with more ranks than cores, yield for TuningOverrides::yield
// (DISTTRAIN_SHM_YIELD_US) before sleeping: the rank we wait for is often runnable on
// this very core, and a yield hands it the core at the cost of one system call, where a
// futex sleep and wake-up cost two plus an interrupt to another CPU (Open MPI's shared
// memory yields the same way when oversubscribed).

// Longest single sleep: bounds how late the deadline, abort and liveness checks run.
constexpr auto kSleepMax = std::chrono::milliseconds(1);

// Yields that keep a rank off its CPU this long on average run something else than the
// peers' short steps (a peer's wait hands the CPU back within microseconds): other jobs'
// processes, which the scheduler lets run for a time slice of milliseconds at each yield
// (4 ranks on 2 vCPUs beside two busy processes: 1.5 ms a yield, against 2-44 us alone).
// A sleep lets the peer's wake-up preempt them instead, so the waits then sleep at once,
// and one yield every kYieldProbe checks whether the CPUs are still that busy.
constexpr auto kYieldHandedAway = std::chrono::microseconds(500);
constexpr auto kYieldProbe = std::chrono::milliseconds(50);
// What one yield can add to the average: a single long one among short ones (a peer's
// longer step, a page fault) must not make the waits sleep.
constexpr auto kYieldSampleMax = std::chrono::milliseconds(2);

// The yields of this thread's waits lately: their average length, the newest weighing an
// eighth (four yields of a time slice decide, one alone does not).
struct YieldHistory {
    std::chrono::duration<double, std::micro> average{0};
    std::chrono::steady_clock::time_point next_probe{};
};
thread_local YieldHistory t_yields;

// Yields until ready() or for `budget`; true when ready. Once the yields have been long,
// a single one every kYieldProbe, and none in between.
template <typename Ready>
bool yield_until(Ready &ready, std::chrono::microseconds budget)
{
    using Clock = std::chrono::steady_clock;
    YieldHistory &yields = t_yields;
    auto now = Clock::now();
    const bool contended = yields.average >= kYieldHandedAway;
    if (budget.count() <= 0 || (contended && now < yields.next_probe))
        return false;
    const auto end = contended ? now : now + budget;
    do {
        if (ready())
            return true;
        ::sched_yield();
        const auto before = now;
        now = Clock::now();
        const std::chrono::duration<double, std::micro> took =
            std::min<Clock::duration>(now - before, kYieldSampleMax);
        yields.average += (took - yields.average) / 8;
        if (yields.average >= kYieldHandedAway) {
            yields.next_probe = now + kYieldProbe;
            return false;
        }
    } while (now < end);
    return false;
}

// CPUs of the host the ranks may share. Not this process's affinity mask: a launcher
// that pins each rank to its own core (taskset, mpirun's binding) leaves one CPU in it,
// which would make every pinned job look oversubscribed and sleep on every wait. Ranks
// pinned together on one CPU are caught per wait instead (the peer's last CPU is ours).
int cpus()
{
    long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    int allowed = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    return static_cast<int>(std::max<long>({online, allowed, 1}));
}

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Shared (not process-private) futex: the word lives in a segment other processes map.
void futex_wait(const std::atomic<uint32_t> &word, uint32_t expected,
                std::chrono::nanoseconds timeout)
{
    timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
                static_cast<long>(timeout.count() % 1000000000)};
    ::syscall(SYS_futex, reinterpret_cast<const uint32_t *>(&word), FUTEX_WAIT, expected,
              &ts, nullptr, 0);
}

} // namespace

Team::Team(Domain &domain, const TeamArgs &args)
    : dom_(domain), args_(args),
      check_word_(args.check != nullptr ? call_check_hash(*args.check) : 0),
      line_(domain.next_line())
{
    static const int kCpus = cpus();
    oversubscribed_ = domain.local_size() > kCpus;
    if (dom_.failed())
        fail(DT_ERR_INVALID_STATE, "the shared-memory domain failed in an earlier call");
}

template <typename Ready>
void Team::wait_for(int local, Ready &&ready)
{
    if (oversubscribed_) {
        for (uint32_t n = 0; n < kSpinOversubscribed; ++n) {
            if (ready())
                return;
            cpu_relax();
        }
        flush_wake();
        if (yield_until(ready, dom_.tuning_overrides().yield))
            return;
    } else {
        // Spinning helps only while the peer runs on another CPU: the scheduler may put
        // both on one core (nothing pins the ranks), and then only sleeping lets it run.
        const std::atomic<int32_t> &peer_cpu = dom_.control(local).wake.cpu;
        auto spin_end = Clock::time_point{};
        for (uint32_t n = 0;; ++n) {
            if (ready())
                return;
            cpu_relax();
            // Not on the first polls: most waits end within them, and reading the clock
            // costs as much as a handoff.
            if ((n & 63) == 63) {
                flush_wake(); // a peer may sleep on what this rank published
                if (peer_cpu.load(std::memory_order_relaxed) == ::sched_getcpu())
                    break;
                auto now = Clock::now();
                if (n == 63)
                    spin_end = now + dom_.tuning_overrides().spin;
                else if (now >= spin_end)
                    break;
            }
        }
    }
    // The peer's state, liveness and notice on the transport are read before the flag: a
    // peer that acked and then left has done its part, and must not be reported as lost.
    auto last_check = Clock::time_point{};
    for (;;) {
        const uint32_t state = dom_.control(local).header.state.load(std::memory_order_acquire);
        const auto now = Clock::now();
        const bool periodic = now - last_check >= kSleepMax;
        const bool alive = !periodic || dom_.alive(local);
        algo::Comm::Departure left;
        if (periodic && args_.comm != nullptr) {
            left = args_.comm->poll_departure(dom_.world_rank_of(local));
            // The notice left the peer after every flag it set: see them too.
            std::atomic_thread_fence(std::memory_order_acquire);
        }
        if (ready())
            return;
        const bool cancelled =
            args_.cancel != nullptr && args_.cancel->load(std::memory_order_relaxed);
        if (periodic || state != kStateLive || cancelled) {
            check(local, now, state, alive, left);
            last_check = now;
        }
        sleep_on(local, ready);
    }
}

// Dekker-style handshake with notify(): we announce the sleep, then look at the flag
// once more; the owner updates the flag, then looks for sleepers. One of the two sees
// the other, so no wake-up is lost (and a sleep ends after kSleepMax regardless).
template <typename Ready>
void Team::sleep_on(int local, Ready &ready)
{
    flush_wake();
    const std::atomic<uint32_t> &word = dom_.control(local).wake.gen;
    const uint32_t gen = word.load(std::memory_order_seq_cst);
    Control &me = dom_.mine();
    me.sleeping.value.store(static_cast<uint64_t>(local) + 1, std::memory_order_seq_cst);
    if (!ready()) {
        auto left = args_.deadline - Clock::now();
        auto timeout = std::min<Clock::duration>(kSleepMax, std::max<Clock::duration>(left, {}));
        futex_wait(word, gen, timeout);
    }
    me.sleeping.value.store(0, std::memory_order_relaxed);
}

void Team::wake_sleepers()
{
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&dom_.mine().wake.gen), FUTEX_WAKE,
              INT32_MAX, nullptr, nullptr, 0);
}

void Team::check(int local, Clock::time_point now, uint32_t state, bool alive,
                 algo::Comm::Departure left)
{
    int world = dom_.world_rank_of(local);
    int me = dom_.world_rank();
    // A peer that left tells why on the transport (its notice), before its segment says
    // closed: that reason names the root cause. A segment read as closed before the flag
    // means the peer left without its part, so its notice may be looked for now.
    if (left.notice.empty() && state != kStateLive && args_.comm != nullptr)
        left = args_.comm->poll_departure(world);
    if (!left.notice.empty())
        args_.comm->fail_departed(world, left);
    if (args_.cancel != nullptr && args_.cancel->load(std::memory_order_relaxed))
        fail(DT_ERR_ABORTED, cat(args_.what, ": aborted on rank ", me, " while waiting for "
                                 "rank ", world, " (the context was aborted)"));
    if (state == kStateFailed) {
        // The peer's own reason names the rank at the root (a dead one, say).
        const char *reason = dom_.control(local).reason;
        std::string why(reason, ::strnlen(reason, kReasonBytes));
        fail(DT_ERR_PEER_LOST, cat(args_.what, ": rank ", world, " failed during the "
                                   "collective: ", why.empty() ? "see its log" : why));
    }
    if (state == kStateClosed)
        fail(DT_ERR_PEER_LOST, cat(args_.what, ": rank ", world, " has destroyed its "
                                   "context while rank ", me, " waited for it"));
    if (!alive)
        fail(DT_ERR_PEER_LOST, cat(args_.what, ": rank ", world, " (pid ",
                                   dom_.pid(local), ") exited while rank ", me,
                                   " waited for it in shared memory; its log or the "
                                   "launcher tells why"));
    if (now >= args_.deadline)
        fail(DT_ERR_TIMEOUT, cat(args_.what, ": timed out waiting for rank ", world,
                                 " (DISTTRAIN_TIMEOUT passed); rank ", world, " may be "
                                 "stuck or not calling this collective: check its log, or "
                                 "raise DISTTRAIN_TIMEOUT if the job is only slow"));
}

void Team::begin(bool counters)
{
    // Every peer that read this segment in an earlier call must be done with it, members
    // of this call or not. Acks only grow (they count shared calls), and a peer may
    // already be past the one it owes: a broadcast root, say, finishes without waiting
    // for its readers.
    for (int local = 0; local < dom_.local_size(); ++local) {
        uint64_t owed = dom_.owed(local);
        if (owed == 0 || owed <= dom_.acked(local))
            continue;
        const std::atomic<uint64_t> &ack = shm::ack(dom_.control(local), dom_.local_rank());
        wait_for(local, [&] { return ack.load(std::memory_order_acquire) >= owed; });
        dom_.acked(local) = owed;
        dom_.owed(local) = 0;
    }
    if (!counters)
        return;
    // Nobody reads these before the tag says so.
    Control &me = dom_.mine();
    me.posted.value.store(0, std::memory_order_relaxed);
    me.reduced.value.store(0, std::memory_order_relaxed);
    me.done.value.store(0, std::memory_order_relaxed);
}

void Team::begin_confined()
{
    confined_ = true;
    for (int local = 0; local < dom_.local_size(); ++local) {
        // Most often known: the peer published the last call, so it had acked the one
        // before, which wrote this line; its ack line is then not read at all.
        uint64_t &owed = dom_.owed_line(line_, local);
        if (owed == 0 || owed <= dom_.acked(local))
            continue;
        const std::atomic<uint64_t> &ack = shm::ack(dom_.control(local), dom_.local_rank());
        wait_for(local, [&] { return ack.load(std::memory_order_acquire) >= owed; });
        dom_.acked(local) = owed;
        owed = 0;
    }
}

const TagLine &Team::wait_published(int member)
{
    // The member writes its two tag lines in turn: this call's tag is in one of them.
    const TagLine *lines = control(member).tags;
    const uint64_t tag = args_.tag;
    const TagLine *found = nullptr;
    wait_for(args_.locals[member], [&] {
        if (lines[0].tag.load(std::memory_order_acquire) == tag)
            found = &lines[0];
        else if (lines[1].tag.load(std::memory_order_acquire) == tag)
            found = &lines[1];
        return found != nullptr;
    });
    const TagLine &line = *found;
    // Having published this call, the member had ended (and acked) every earlier one.
    const int local = args_.locals[member];
    dom_.acked(local) = std::max(dom_.acked(local), dom_.calls_with(local));
    const uint64_t theirs = line.check.load(std::memory_order_relaxed);
    if (theirs != check_word_)
        check_failed(member, theirs);
    return line;
}

void Team::check_failed(int member, uint64_t theirs)
{
    const int me = dom_.world_rank();
    const int peer = world_rank(member);
    const std::string what = cat(args_.what, " '", args_.name, "'");
    std::string message;
    if (args_.check == nullptr || theirs == 0) {
        message = cat(what, ": rank ", peer, " ran this call ",
                      theirs == 0 ? "negotiated" : "in ordered mode", " and rank ", me,
                      theirs == 0 ? " in ordered mode" : " negotiated",
                      ": every rank must set DISTTRAIN_ORDERED alike");
    } else {
        // Written before its tag.
        CallCheck peer_call = call_line(control(member), dom_.local_size()).call;
        message = call_check_mismatch(what, me, *args_.check, peer, peer_call);
        if (message.empty()) // the hashes differ but no compared field does
            message = cat(what, ": rank ", peer, " runs another call in this place; ",
                          "with DISTTRAIN_ORDERED=1 every rank must call the same "
                          "collectives with the same arguments in the same order");
    }
    fail(DT_ERR_MISMATCH, message);
}

void Team::wait_counter(int member, Counter counter, uint64_t at_least)
{
    const std::atomic<uint64_t> &v = (control(member).*counter).value;
    wait_for(args_.locals[member],
             [&] { return v.load(std::memory_order_acquire) >= at_least; });
}

void Team::end()
{
    Control &me = dom_.mine();
    for (int m = 0; m < args_.size; ++m) {
        if (m == args_.rank)
            continue;
        int local = args_.locals[m];
        uint64_t shared = ++dom_.calls_with(local);
        ack(me, local).store(shared, std::memory_order_release);
        dom_.owed(local) = shared;
        dom_.owed_line(line_, local) = shared;
        if (!confined_) // the data area, both halves, and the counters
            dom_.owed_line(line_ ^ 1, local) = shared;
    }
    dom_.flip_line();
    notify();
}

void Team::fail(dt_status_t status, const std::string &message)
{
    dom_.mark_failed(message);
    if (args_.comm != nullptr)
        args_.comm->fail_collective(status, message);
    throw Error(status, message);
}

} // namespace dt::shm

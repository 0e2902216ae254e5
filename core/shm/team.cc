#include "shm/team.h"

#include "algorithms/comm.h"
#include "runtime/error.h"

#include <thread>

#include <sched.h>
#include <unistd.h>

namespace dt::shm {

namespace {

// Spins before the first yield. On a host with a core per rank a peer a few hundred
// nanoseconds behind is the common case; with more ranks than cores spinning only
// delays the peer we wait for, so we yield almost at once.
constexpr uint32_t kSpinDedicated = 4096;
constexpr uint32_t kSpinOversubscribed = 8;
// Yield for this long before sleeping; then sleep in steps of kSleep. A rank that waits
// this long is waiting for a peer that is still computing, not for a handoff.
constexpr auto kYieldFor = std::chrono::milliseconds(2);
constexpr auto kSleep = std::chrono::microseconds(50);
// How often a waiting rank asks the kernel whether the peer is still alive.
constexpr auto kLivenessEvery = std::chrono::milliseconds(1);

int cpus()
{
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return static_cast<int>(std::thread::hardware_concurrency());
}

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

} // namespace

Team::Team(Domain &domain, const TeamArgs &args) : dom_(domain), args_(args)
{
    static const int kCpus = cpus();
    spin_limit_ = domain.local_size() > kCpus ? kSpinOversubscribed : kSpinDedicated;
    if (dom_.failed())
        fail(DT_ERR_INVALID_STATE, "the shared-memory domain failed in an earlier call");
}

template <typename Ready>
void Team::wait_for(int local, Ready &&ready)
{
    uint32_t n = 0;
    Clock::time_point since{}, checked{};
    while (!ready()) {
        if (++n <= spin_limit_) {
            cpu_relax();
            continue;
        }
        idle(local, n, since, checked);
    }
}

void Team::idle(int local, uint32_t n, Clock::time_point &since, Clock::time_point &checked)
{
    auto now = Clock::now();
    if (n == spin_limit_ + 1) {
        since = checked = now;
        check(local, now);
    } else if (now - checked >= kLivenessEvery) {
        checked = now;
        check(local, now);
    } else {
        // Cheap checks on every round: a flag the owner of a dead context set, an abort.
        uint32_t state = dom_.control(local).header.state.load(std::memory_order_acquire);
        if (state != kStateLive ||
            (args_.cancel != nullptr && args_.cancel->load(std::memory_order_relaxed)))
            check(local, now);
    }
    if (now - since < kYieldFor)
        ::sched_yield();
    else
        std::this_thread::sleep_for(kSleep);
}

void Team::check(int local, Clock::time_point now)
{
    int world = dom_.world_rank_of(local);
    int me = dom_.world_rank();
    if (args_.cancel != nullptr && args_.cancel->load(std::memory_order_relaxed))
        fail(DT_ERR_ABORTED, cat(args_.what, ": aborted on rank ", me, " while waiting for "
                                 "rank ", world, " (the context was aborted)"));
    uint32_t state = dom_.control(local).header.state.load(std::memory_order_acquire);
    if (state == kStateFailed)
        fail(DT_ERR_PEER_LOST, cat(args_.what, ": rank ", world, " failed during the "
                                   "collective (see its log for the cause)"));
    if (state == kStateClosed)
        fail(DT_ERR_PEER_LOST, cat(args_.what, ": rank ", world, " has destroyed its "
                                   "context while rank ", me, " waited for it"));
    if (!dom_.alive(local))
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

void Team::begin()
{
    // Every peer that read this segment in an earlier call must be done with it, members
    // of this call or not. Acks only grow (tags do), and a peer may already be past the
    // one it owes: a broadcast root, say, finishes without waiting for its readers.
    for (int local = 0; local < dom_.local_size(); ++local) {
        uint64_t owed = dom_.owed(local);
        if (owed == 0)
            continue;
        const std::atomic<uint64_t> &ack = shm::ack(dom_.control(local), dom_.local_rank());
        wait_for(local, [&] { return ack.load(std::memory_order_acquire) >= owed; });
        dom_.owed(local) = 0;
    }
    // Nobody reads these before the tag says so.
    Control &me = dom_.mine();
    me.posted.value.store(0, std::memory_order_relaxed);
    me.reduced.value.store(0, std::memory_order_relaxed);
    me.done.value.store(0, std::memory_order_relaxed);
}

const TagLine &Team::wait_published(int member)
{
    const TagLine &line = control(member).tag;
    const uint64_t tag = args_.tag;
    wait_for(args_.locals[member],
             [&] { return line.tag.load(std::memory_order_acquire) == tag; });
    return line;
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
        ack(me, local).store(args_.tag, std::memory_order_release);
        dom_.owed(local) = args_.tag;
    }
}

void Team::fail(dt_status_t status, const std::string &message)
{
    dom_.mark_failed();
    if (args_.comm != nullptr)
        args_.comm->fail_collective(status, message);
    throw Error(status, message);
}

} // namespace dt::shm

// SPDX-License-Identifier: Apache-2.0
#include "shm/domain.h"

#include "runtime/error.h"
#include "shm/cma.h"
#include "telemetry/log.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include <algorithm>
#include <climits>

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace dt::shm {

namespace {

using Millis = std::chrono::milliseconds;

// store.wait that also gives up once abandon_key is set (DomainOptions::abandon_key),
// looking for it every few milliseconds. timeout below 0: none.
void wait_keys(bootstrap::StoreClient &store, const std::vector<std::string> &keys,
               Millis timeout, const std::string &abandon_key)
{
    if (abandon_key.empty()) {
        store.wait(keys, timeout);
        return;
    }
    using Clock = std::chrono::steady_clock;
    const auto deadline = timeout.count() >= 0 ? Clock::now() + timeout : Clock::time_point::max();
    for (;;) {
        auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
        try {
            store.wait(keys, std::clamp(left, Millis{1}, Millis{10}));
            return;
        } catch (const Error &e) {
            if (e.status() != DT_ERR_TIMEOUT || left <= Millis{10})
                throw; // past the deadline: the store's error names the missing keys
        }
        std::string why;
        try {
            why = store.get(abandon_key, Millis{0});
        } catch (const Error &e) {
            if (e.status() != DT_ERR_TIMEOUT)
                throw;
            continue;
        }
        throw_error(DT_ERR_CONNECT, "shared memory set-up given up: ", why);
    }
}

std::string random_nonce()
{
    std::random_device rd;
    uint64_t v = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(::getpid());
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string host_name()
{
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    return buf;
}

// A descriptor that becomes readable when the process exits (also while it is an
// unreaped zombie, and never for a later process that reuses the pid). -1 where the
// kernel has no pidfd_open: then kill(pid, 0) is the fallback.
int open_pidfd(int pid)
{
#ifdef SYS_pidfd_open
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    return -1;
#endif
}

} // namespace

Domain::Domain(bootstrap::StoreClient &store, const DomainOptions &opts)
    : world_rank_(opts.rank), world_size_(opts.size), local_rank_(opts.local_rank),
      local_size_(opts.local_size), host_start_(opts.rank - opts.local_rank),
      data_bytes_(opts.data_bytes != 0 ? opts.data_bytes : kDefaultDataBytes),
      tuning_(opts.tuning), cma_options_(opts.cma)
{
    data_bytes_ = (data_bytes_ + 4095) & ~size_t(4095);
    meet(store, opts);
    learn_hosts(store, opts);
}

Domain::~Domain()
{
    if (!ctl_.empty() && ctl_[local_rank_] != nullptr && !failed_) {
        mine().header.state.store(kStateClosed, std::memory_order_release);
        mine().wake.gen.fetch_add(1, std::memory_order_seq_cst);
        ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&mine().wake.gen), FUTEX_WAKE,
                  INT32_MAX, nullptr, nullptr, 0);
    }
    for (int fd : pidfds_)
        if (fd >= 0)
            ::close(fd);
}

void Domain::meet(bootstrap::StoreClient &store, const DomainOptions &opts)
{
    const std::string host = cat(opts.key_prefix, "host", host_start_, "/");
    const Millis timeout = opts.timeout.count() > 0 ? opts.timeout : Millis(-1);
    std::string nonce;
    if (local_rank_ == 0) {
        nonce = random_nonce();
        store.set(host + "nonce", nonce);
    } else {
        wait_keys(store, {host + "nonce"}, timeout, opts.abandon_key);
        nonce = store.get(host + "nonce", timeout);
    }
    const std::string self_host = host_name();
    const size_t bytes = control_bytes(local_size_) + data_bytes_;
    names_.resize(local_size_);
    for (int i = 0; i < local_size_; ++i)
        names_[i] = cat("/disttrain-", nonce, "-", i);

    // 1. Create and fill in our own segment, then say so.
    segments_.resize(local_size_);
    segments_[local_rank_] = Segment::create(names_[local_rank_], bytes);
    auto *me = reinterpret_cast<Control *>(segments_[local_rank_].data());
    me->header.magic = kMagic;
    me->header.pid = static_cast<int32_t>(::getpid());
    me->header.world_rank = world_rank_;
    me->header.local_size = static_cast<uint32_t>(local_size_);
    me->header.data_bytes = data_bytes_;
    // Any value a peer could not find by chance at that address of another process.
    probe_word_ = kMagic ^ std::hash<std::string>{}(names_[local_rank_]) ^ uint64_t(::getpid());
    me->header.probe_addr = reinterpret_cast<uint64_t>(&probe_word_);
    me->header.probe_value = probe_word_;
    me->header.state.store(kStateLive, std::memory_order_release);
    store.set(cat(host, "created/", local_rank_), self_host);

    // 2. Map every peer's segment read-only; check it is the one we expect.
    std::vector<std::string> created;
    for (int i = 0; i < local_size_; ++i)
        created.push_back(cat(host, "created/", i));
    wait_keys(store, created, timeout, opts.abandon_key);
    ctl_.resize(local_size_);
    data_.resize(local_size_);
    pids_.resize(local_size_);
    pidfds_.assign(local_size_, -1);
    owed_.assign(local_size_, 0);
    calls_with_.assign(local_size_, 0);
    owed_line_[0].assign(local_size_, 0);
    owed_line_[1].assign(local_size_, 0);
    acked_.assign(local_size_, 0);
    for (int i = 0; i < local_size_; ++i) {
        if (i != local_rank_) {
            std::string peer_host = store.get(created[i], timeout);
            if (peer_host != self_host)
                throw_error(DT_ERR_INVALID_CONFIG, "shared memory: rank ", host_start_ + i,
                            " runs on host '", peer_host, "' but rank ", world_rank_,
                            " on '", self_host, "', yet DISTTRAIN_LOCAL_RANK/SIZE put them "
                            "on one host; fix the launcher's placement or set "
                            "DISTTRAIN_SHM=0");
            segments_[i] = Segment::open(names_[i], bytes, false);
        }
        ctl_[i] = reinterpret_cast<Control *>(segments_[i].data());
        data_[i] = segments_[i].data() + control_bytes(local_size_);
        const Header &h = ctl_[i]->header;
        if (h.magic != kMagic || h.world_rank != host_start_ + i ||
            h.data_bytes != data_bytes_ || h.local_size != uint32_t(local_size_))
            throw_error(DT_ERR_INVALID_CONFIG, "shared memory: segment '", names_[i],
                        "' does not belong to rank ", host_start_ + i, " of this job with ",
                        data_bytes_, " staging bytes; every rank must use the same "
                        "DISTTRAIN_SHM_BYTES");
        pids_[i] = h.pid;
        if (i != local_rank_)
            pidfds_[i] = open_pidfd(h.pid);
    }

    // 3. Probe the peers with process_vm_readv (every peer has filled in its header and
    // is alive: it waits for the rendezvous below) and publish the verdict before that
    // rendezvous, so that every rank has every verdict before the first call.
    const std::string why_not = probe_peers();
    me->header.cma.store(why_not.empty() ? kCmaYes : kCmaNo, std::memory_order_release);

    // 4. Once every rank has mapped every segment, the names can go: from here on a
    // killed job leaves nothing in /dev/shm.
    store.set(cat(host, "mapped/", local_rank_), "1");
    std::vector<std::string> mapped;
    for (int i = 0; i < local_size_; ++i)
        mapped.push_back(cat(host, "mapped/", i));
    wait_keys(store, mapped, timeout, opts.abandon_key);
    segments_[local_rank_].unlink();
    cma_.assign(local_size_, 0);
    int refusing = -1;
    for (int i = 0; i < local_size_; ++i) {
        cma_[i] = ctl_[i]->header.cma.load(std::memory_order_acquire) == kCmaYes;
        if (!cma_[i] && refusing < 0)
            refusing = i;
    }
    // Once per domain. A refused probe is worth an info line (it decides which path
    // large allreduces take where DISTTRAIN_SHM_CMA_BYTES is set); a peer's refusal or
    // the variable is only debug (that peer logs its own reason).
    if (!why_not.empty() && cma_options_.enabled)
        DT_LOG(info, "shm", "rank ", world_rank_, ": single-copy reads off: ", why_not,
               "; allreduce copies through the staging area (process_vm_readv needs "
               "ptrace rights over the peers: same user, kernel.yama.ptrace_scope 0 or "
               "CAP_SYS_PTRACE, no seccomp filter refusing it)");
    else if (refusing >= 0)
        DT_LOG(debug, "shm", "rank ", world_rank_, ": single-copy reads off: ",
               why_not.empty() ? cat("rank ", host_start_ + refusing, " cannot read every "
                                     "peer or has them off")
                               : why_not);
    else
        DT_LOG(debug, "shm", "rank ", world_rank_, ": single-copy reads (process_vm_readv) "
               "between the ", local_size_, " ranks of this host");
    DT_LOG(debug, "shm", "rank ", world_rank_, ": mapped ", local_size_, " segments of ",
           bytes, " bytes (", names_[0], "...)");
}

void Domain::learn_hosts(bootstrap::StoreClient &store, const DomainOptions &opts)
{
    host_start_of_.assign(world_size_, 0);
    if (world_size_ == local_size_)
        return; // one host
    const Millis timeout = opts.timeout.count() > 0 ? opts.timeout : Millis(-1);
    store.set(cat(opts.key_prefix, "hoststart/", world_rank_), std::to_string(host_start_));
    std::vector<std::string> keys;
    for (int r = 0; r < world_size_; ++r)
        keys.push_back(cat(opts.key_prefix, "hoststart/", r));
    wait_keys(store, keys, timeout, opts.abandon_key);
    for (int r = 0; r < world_size_; ++r)
        host_start_of_[r] = std::stoi(store.get(keys[r], timeout));
}

std::string Domain::probe_peers()
{
    if (!cma_options_.enabled)
        return "DISTTRAIN_SHM_CMA=0";
    for (int i = 0; i < local_size_; ++i) {
        if (i == local_rank_)
            continue;
        const Header &h = ctl_[i]->header;
        uint64_t word = 0;
        int err = cma_options_.fail_probe
                      ? EPERM
                      : cma::read(pids_[i], &word, h.probe_addr, sizeof word);
        std::string what;
        if (err != 0)
            what = cma::describe(err);
        else if (word != h.probe_value)
            what = "read a word other than the one it published"; // a pid namespace apart?
        if (!what.empty())
            return cat("process_vm_readv of rank ", host_start_ + i, " (pid ", pids_[i],
                       ") failed: ", what);
    }
    return "";
}

std::byte *Domain::cma_scratch(size_t bytes)
{
    if (bytes > cma_scratch_bytes_) {
        bytes = (bytes + 4095) & ~size_t(4095);
        auto *p = static_cast<std::byte *>(std::aligned_alloc(4096, bytes));
        if (p == nullptr)
            return nullptr;
        cma_scratch_.reset(p);
        cma_scratch_bytes_ = bytes;
    }
    return cma_scratch_.get();
}

bool Domain::alive(int local) const
{
    if (local == local_rank_)
        return true;
    int fd = pidfds_[local];
    if (fd >= 0) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
    }
    return ::kill(pids_[local], 0) == 0 || errno == EPERM;
}

void Domain::mark_failed(const std::string &reason)
{
    if (failed_ || ctl_.empty()) {
        failed_ = true;
        return;
    }
    failed_ = true;
    Control &me = mine();
    size_t n = std::min(reason.size(), kReasonBytes - 1);
    std::memcpy(me.reason, reason.data(), n);
    me.reason[n] = '\0';
    me.header.state.store(kStateFailed, std::memory_order_release);
    // Wake any peer asleep on us: it should learn of the failure now, not in 1 ms.
    me.wake.gen.fetch_add(1, std::memory_order_seq_cst);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&me.wake.gen), FUTEX_WAKE, INT32_MAX,
              nullptr, nullptr, 0);
}

} // namespace dt::shm

#include "shm/attach.h"

#include "runtime/env.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace dt::shm {

namespace {

// Transports with an attached domain. A process holds a context or a few, so a short
// list under a lock is all the index needs; it holds no state beyond the contexts' own.
std::mutex g_mutex;
std::vector<std::pair<const Transport *, Domain *>> g_attached;
// Bumped (under g_mutex) whenever the list changes. Each thread remembers its last
// answer with the generation it was read at, so the lookup of a small collective takes
// no lock: a cached answer is used only while nothing was attached or detached since.
std::atomic<uint64_t> g_generation{1};
struct Cached {
    uint64_t generation = 0;
    const Transport *transport = nullptr;
    Domain *domain = nullptr;
};
thread_local Cached t_cached;

} // namespace

std::unique_ptr<Attachment> Attachment::open(bootstrap::StoreClient &store,
                                             const Transport &transport,
                                             const AttachOptions &opts)
{
    const bool enabled = env::get_int("DISTTRAIN_SHM", 1, 0, 1) == 1;
    const int64_t bytes = env::get_int("DISTTRAIN_SHM_BYTES", int64_t(kDefaultDataBytes),
                                       64 * 1024, int64_t(1) << 34);
    const bool cma = env::get_int("DISTTRAIN_SHM_CMA", 1, 0, 1) == 1;
    DomainOptions d;
    d.rank = opts.rank;
    d.size = opts.size;
    d.local_rank = opts.local_rank;
    d.local_size = opts.local_size;
    const int64_t split = env::get_int("DISTTRAIN_SHM_LOCAL_SIZE", 0, 0, 1 << 20);
    if (split > 0) {
        if (opts.size % split != 0 || split > opts.local_size)
            throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_SHM_LOCAL_SIZE=", split,
                        " must divide the job's ", opts.size, " ranks and not exceed the ",
                        opts.local_size, " ranks of this host");
        d.local_size = static_cast<int>(split);
        d.local_rank = opts.rank % static_cast<int>(split);
    }
    if (!enabled) {
        DT_LOG(debug, "shm", "shared memory off (DISTTRAIN_SHM=0)");
        return nullptr;
    }
    if (d.local_size <= 1 || !opts.local_known)
        return nullptr;
    if (transport.ops().allreduce != nullptr) {
        DT_LOG(debug, "shm", "transport '", transport.name(), "' has native collectives; "
               "shared memory stays off");
        return nullptr;
    }
    d.data_bytes = static_cast<size_t>(bytes);
    d.key_prefix = opts.key_prefix;
    d.timeout = opts.timeout;
    d.allreduce_choice = algo::allreduce_choice();
    d.cma.enabled = cma;
    auto domain = std::make_unique<Domain>(store, d);
    DT_LOG(info, "shm", "shared memory between the ", d.local_size, " ranks of this host (",
           domain->data_bytes() >> 10, " KiB staging per rank)");
    return std::unique_ptr<Attachment>(new Attachment(transport, std::move(domain)));
}

Attachment::Attachment(const Transport &transport, std::unique_ptr<Domain> domain)
    : transport_(transport), domain_(std::move(domain))
{
    std::lock_guard lock(g_mutex);
    g_attached.emplace_back(&transport_, domain_.get());
    g_generation.fetch_add(1, std::memory_order_release);
}

Attachment::~Attachment()
{
    std::lock_guard lock(g_mutex);
    std::erase_if(g_attached, [&](const auto &e) { return e.first == &transport_; });
    g_generation.fetch_add(1, std::memory_order_release);
}

Domain *domain_of(const Transport &transport)
{
    Cached &c = t_cached;
    if (c.transport == &transport &&
        c.generation == g_generation.load(std::memory_order_acquire))
        return c.domain;
    std::lock_guard lock(g_mutex);
    Domain *found = nullptr;
    for (const auto &[t, d] : g_attached)
        if (t == &transport)
            found = d;
    c = {g_generation.load(std::memory_order_relaxed), &transport, found};
    return found;
}

} // namespace dt::shm

// The router's tables: per collective kind, the candidate paths in order of preference.
// The first that applies (and does not decline at run time) runs. Device memory will
// add a staging path (pinned host buffers) after the paths that take it natively and
// before the point-to-point algorithms, which read host memory only.
#include "routing/table.h"

#include "routing/paths.h"

namespace dt::routing {

namespace {

constexpr const Path *kAllreduce[] = {&kNative, &kShmLocalAllreduce, &kShmHierarchical,
                                      &kRecursiveDoubling, &kHalvingDoubling, &kRing};
constexpr const Path *kBroadcast[] = {&kNative, &kShmLocal, &kBroadcastTreeChain};
constexpr const Path *kAllgather[] = {&kNative, &kShmLocal, &kAllgatherRing};
constexpr const Path *kReduceScatter[] = {&kNative, &kShmLocal, &kReduceScatterRing};
constexpr const Path *kAlltoall[] = {&kNative, &kShmLocal, &kAlltoallPairwise};
constexpr const Path *kBarrier[] = {&kNative, &kShmLocal, &kBarrierDissemination};

} // namespace

std::span<const Path *const> paths_for(OpKind kind) noexcept
{
    switch (kind) {
    case OpKind::allreduce: return kAllreduce;
    case OpKind::broadcast: return kBroadcast;
    case OpKind::allgather: return kAllgather;
    case OpKind::reduce_scatter: return kReduceScatter;
    case OpKind::alltoall: return kAlltoall;
    case OpKind::barrier: return kBarrier;
    case OpKind::join: break; // the engine's own: it never reaches a transport
    }
    return {};
}

bool applies_to(const Path &path, const Call &call, const Topology &topology,
                const Policy &policy) noexcept
{
    return (path.memory & memory_bit(call.memory)) != 0 && path.applies(call, topology, policy);
}

bool accepts_memory(OpKind kind, Memory memory) noexcept
{
    for (const Path *p : paths_for(kind))
        if ((p->memory & memory_bit(memory)) != 0)
            return true;
    return false;
}

const Path *choose(const Call &call, const Topology &topology, const Policy &policy) noexcept
{
    for (const Path *p : paths_for(call.kind))
        if (applies_to(*p, call, topology, policy))
            return p;
    return nullptr;
}

} // namespace dt::routing

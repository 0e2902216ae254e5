// SPDX-License-Identifier: Apache-2.0
// The router's tables: per collective kind, the candidate paths in order of preference.
// The first that applies (and does not decline at run time) runs. Staging (device memory
// through pinned host buffers) comes after the transport's native collectives, which may
// take device memory themselves, and before the host-only paths.
#include "routing/table.h"

#include "routing/paths.h"

namespace dt::routing {

namespace {

constexpr const Path *kAllreduce[] = {&kDeviceNative,      &kNative,           &kStaging,
                                      &kShmLocalAllreduce, &kShmHierarchical,
                                      &kRecursiveDoubling, &kHalvingDoubling, &kRing};
constexpr const Path *kBroadcast[] = {&kDeviceNative, &kNative, &kStaging, &kShmLocal,
                                      &kBroadcastTreeChain};
constexpr const Path *kAllgather[] = {&kDeviceNative, &kNative, &kStaging, &kShmLocal,
                                      &kAllgatherRing};
constexpr const Path *kReduceScatter[] = {&kDeviceNative, &kNative, &kStaging, &kShmLocal,
                                          &kReduceScatterRing};
constexpr const Path *kAlltoall[] = {&kDeviceNative, &kNative, &kStaging, &kShmLocal,
                                     &kAlltoallPairwise};
// Uneven blocks: no transport table has them, so the core's algorithms carry host
// memory and staging device memory.
constexpr const Path *kAllgatherv[] = {&kStaging, &kAllgathervRing};
constexpr const Path *kAlltoallv[] = {&kStaging, &kAlltoallvPairwise};
constexpr const Path *kBarrier[] = {&kNative, &kShmLocal, &kBarrierDissemination};

// The memory the transport accepts where the path hands it the call's buffers.
uint8_t carrier_memory(Carrier carrier, const Topology &topology) noexcept
{
    switch (carrier) {
    case Carrier::native: return topology.native_memory;
    case Carrier::point_to_point: return topology.p2p_memory;
    case Carrier::shared_memory:
    case Carrier::none: break;
    }
    return 0xFF; // no transport: the path's own memory bits decide
}

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
    case OpKind::allgatherv: return kAllgatherv;
    case OpKind::alltoallv: return kAlltoallv;
    case OpKind::join: break; // the engine's own: it never reaches a transport
    }
    return {};
}

bool applies_to(const Path &path, const Call &call, const Topology &topology,
                const Policy &policy) noexcept
{
    const uint8_t bit = memory_bit(call.memory);
    return (path.memory & bit) != 0 && (carrier_memory(path.carrier, topology) & bit) != 0 &&
           path.applies(call, topology, policy);
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

/* SPDX-License-Identifier: Apache-2.0 */
// The paths the router's tables (table.cc) are made of, one family per file:
// path_native.cc (the transport's own collectives), path_shm.cc (shared memory on this
// host, hierarchical across hosts) and path_algorithms.cc (the core's point-to-point
// algorithms) and path_staging.cc (device memory through pinned host buffers).
#pragma once

#include "routing/path.h"

namespace dt::routing {

// The transport's native collective of the call's kind (MPI): the whole job only.
extern const Path kNative;

// The device transport's native collective (NCCL) on device memory, the whole job only.
// Divides DT_AVG itself (on the device), declining when ranks have joined.
extern const Path kDeviceNative;

// Device memory on host-only paths: copied to pinned host buffers, run as a host call,
// copied back. Needs a memory provider. Divides DT_AVG on the host copy.
extern const Path kStaging;

// Shared memory, every member on this host. Allreduce divides DT_AVG's sum itself.
extern const Path kShmLocalAllreduce;
extern const Path kShmLocal;
// Allreduce across hosts where some host holds several members: shm reduce on each
// host, allreduce among one leader per host over the transport, shm broadcast.
extern const Path kShmHierarchical;

// Point-to-point allreduce, one path per algorithm; the size thresholds and the forced
// algorithm (DISTTRAIN_ALGORITHM) decide which applies (algo::select_allreduce).
extern const Path kRecursiveDoubling;
extern const Path kHalvingDoubling;
extern const Path kRing;
// Point-to-point, one algorithm per kind: each applies to every call of its kind.
extern const Path kBroadcastTreeChain;
extern const Path kAllgatherRing;
extern const Path kReduceScatterRing;
extern const Path kAlltoallPairwise;
extern const Path kBarrierDissemination;
// Uneven blocks: a check of every rank's counts, then a ring (allgatherv) or pairwise
// exchange (alltoallv).
extern const Path kAllgathervRing;
extern const Path kAlltoallvPairwise;

} // namespace dt::routing

/* SPDX-License-Identifier: Apache-2.0 */
// One way to run a collective: a name (for the debug log and the timeline), the memory
// it can read and write, a test of whether it applies to a call, and the run itself.
// The router (router.h) keeps one ordered table of them per collective kind (table.cc).
#pragma once

#include "algorithms/comm.h"
#include "routing/policy.h"
#include "routing/topology.h"
#include "runtime/operation.h"

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>

namespace dt::shm {
class Domain;
}

namespace dt::routing {

// The router's member for a resolved dt_memory_type_t (host or device).
constexpr Memory memory_of(dt_memory_type_t type)
{
    return type == DT_MEMORY_DEVICE ? Memory::device : Memory::host;
}

// What applies() looks at: the call's shape, never its buffers.
struct Call {
    OpKind kind = OpKind::barrier;
    size_t bytes = 0; // count x dtype size: per rank, or per rank's block
    Memory memory = Memory::host;
};

// What run() gets: the operation with DT_AVG already turned into DT_SUM (Router::run
// divides once at the end, or hands the divisor to a path that divides itself).
struct Args {
    OpKind kind = OpKind::barrier;
    const void *sendbuf = nullptr;
    void *recvbuf = nullptr;
    size_t count = 0;
    dt_dtype_t dtype = DT_UINT8;
    dt_reduce_op_t op = DT_SUM; // never DT_AVG
    int root = 0;
    const size_t *counts = nullptr; // allgatherv, alltoallv: OpDesc::counts
    const char *name = "";      // the operation's, for messages
    int avg_divisor = 0;        // > 0 only for a path with divides_average, on DT_AVG
    void *stream = nullptr;     // device memory: the producer's stream (null: default)
    void *ready = nullptr;      // ... and the event recorded on it at the call (OpDesc;
                                // null for a blocking call, which records none)
    bool blocking = false;      // the caller waits for the call (OpDesc)
    bool whole_job = true;      // the call spans every rank of the job (group 0)
    // The device transport of the call's members: the context's for the whole job, the
    // group's own communicator (Router::split_device) for a group; null: none.
    Transport *device = nullptr;
};

class DeviceWait;
class Router;
class Staging;

// What the context lends its paths: the policy, the shared-memory domain (null: none),
// the staging buffers of the memory provider (null: none), the router itself, which
// staging hands the host copy of a device call, the device transport (null: none) and
// its wait for the producer.
// Owned by the router, which the context owns.
struct Services {
    const Policy *policy = nullptr;
    shm::Domain *domain = nullptr;
    Staging *staging = nullptr;
    Router *router = nullptr;
    Transport *device_transport = nullptr; // DISTTRAIN_DEVICE_TRANSPORT, or null
    // How the device transport's calls wait for the producer's event (null: no memory
    // provider, so no events).
    DeviceWait *device_wait = nullptr;
};

// What moves a path's data between ranks, so that the router also asks whether that
// carrier accepts the call's memory (the transport says so in its capability answer).
enum class Carrier : uint8_t {
    native,         // the transport's native collectives
    point_to_point, // the transport's isend/irecv (under the core's algorithms)
    shared_memory,  // this host's shared-memory domain only; no transport involved
    none,           // the path hands the transport no buffer of the call (staging)
};

struct Path {
    const char *name;
    uint8_t memory; // Memory bits of the buffers it can touch
    Carrier carrier;
    // Divides DT_AVG's sum itself where that is cheapest (shm: each slice while it is in
    // cache); the router then does not divide again.
    bool divides_average;
    bool (*applies)(const Call &call, const Topology &topology, const Policy &policy);
    // Runs the call and returns true; false, having moved nothing, when it declines at
    // run time (a native collective that answers DTP_ERR_UNSUPPORTED): the next path in
    // the table that applies runs. Throws dt::Error on failure.
    bool (*run)(const Services &services, algo::Comm &comm, const Args &args);
};

} // namespace dt::routing

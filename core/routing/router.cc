// SPDX-License-Identifier: Apache-2.0
#include "routing/router.h"

#include "plugin/memory_provider.h"
#include "reduce/reduce.h"
#include "routing/host_check.h"
#include "routing/native_call.h"
#include "routing/paths.h"
#include "routing/table.h"
#include "runtime/error.h"
#include "shm/domain.h"
#include "shm/route.h"
#include "telemetry/log.h"

namespace dt::routing {

namespace {

uint32_t native_kinds(const Transport &t)
{
    const dt_transport_v3_t &ops = t.ops();
    uint32_t bits = 0;
    if (ops.allreduce != nullptr)
        bits |= kind_bit(OpKind::allreduce);
    if (ops.broadcast != nullptr)
        bits |= kind_bit(OpKind::broadcast);
    if (ops.allgather != nullptr)
        bits |= kind_bit(OpKind::allgather);
    if (ops.reduce_scatter != nullptr)
        bits |= kind_bit(OpKind::reduce_scatter);
    if (ops.alltoall != nullptr)
        bits |= kind_bit(OpKind::alltoall);
    if (ops.barrier != nullptr)
        bits |= kind_bit(OpKind::barrier);
    return bits;
}

// The Memory bits of what the transport accepts, from the answer it gave once at load.
// Host is the only Memory the router knows today; device maps here when it gains one.
uint8_t accepted_memory(const Transport &t, bool native)
{
    uint8_t bits = 0;
    if (t.accepts(TransportMemory::host, native))
        bits |= memory_bit(Memory::host);
    if (t.accepts(TransportMemory::device, native))
        bits |= memory_bit(Memory::device);
    return bits;
}

bool reduces(OpKind kind) { return kind == OpKind::allreduce || kind == OpKind::reduce_scatter; }

} // namespace

Router::Router(const Policy &policy, const Transport &transport, Transport *device,
               shm::Domain *domain, plugin::MemoryProvider *memory, int job_size)
    : policy_(policy), native_(native_kinds(transport)),
      device_native_(device != nullptr ? native_kinds(*device) : 0),
      p2p_memory_(accepted_memory(transport, false)),
      native_memory_(accepted_memory(transport, true))
{
    if (memory != nullptr) {
        staging_ = std::make_unique<Staging>(*memory);
        const char *runtime = memory->ops().name;
        device_wait_ = std::make_unique<DeviceWait>(
            runtime != nullptr ? runtime : memory->provider(), *memory, *staging_);
    }
    services_.policy = &policy_;
    services_.domain = domain;
    services_.staging = staging_.get();
    services_.device_wait = device_wait_.get();
    services_.router = this;
    services_.device_transport = device;
    // Shared memory stays off beside a transport's native collectives (shm/attach.cc),
    // so forcing it changes nothing: say so once rather than let it look obeyed.
    if (policy_.algorithm == algo::AllreduceChoice::shm && domain == nullptr &&
        (native_ & kind_bit(OpKind::allreduce)) != 0)
        DT_LOG(info, "routing", "DISTTRAIN_ALGORITHM=shm: shared memory stays off beside the "
               "native collectives of transport '", transport.name(), "', so allreduce "
               "runs on them, as with auto; a point-to-point algorithm (ring, ...) can be "
               "forced instead");
    if (domain != nullptr) {
        my_host_ = domain->host_of(domain->world_rank());
        scratch_.reserve(static_cast<size_t>(job_size));
        job_spread_ = spread_of(job_size, my_host_, [&](int r) { return domain->host_of(r); },
                                scratch_);
    }
}

Router::~Router()
{
    if (device_wait_ != nullptr && services_.device_transport != nullptr)
        DT_LOG(debug, "routing", "device transport '", services_.device_transport->name(),
               "': ", device_wait_->on_stream(), " calls ran on their producer's stream, ",
               device_wait_->on_device(), " waited for their producer on the device, ",
               device_wait_->on_host(), " on the host");
}

Topology Router::topology(const algo::Comm &comm, bool whole_job)
{
    Topology t;
    t.size = comm.size();
    t.whole_job = whole_job;
    t.native = native_;
    t.p2p_memory = p2p_memory_;
    t.native_memory = native_memory_;
    t.staging = staging_ != nullptr;
    t.device_native = device_native_;
    shm::Domain *dom = services_.domain;
    t.shm = dom != nullptr && !dom->failed();
    if (t.shm)
        t.spread = whole_job ? job_spread_
                             : spread_of(t.size, my_host_,
                                         [&](int i) { return dom->host_of(comm.world_rank(i)); },
                                         scratch_);
    return t;
}

const char *Router::run(algo::Comm &comm, const OpDesc &op, int avg_divisor)
{
    const Call call{op.kind, op.count * dt_dtype_size(op.dtype), memory_of(op.memory)};
    Topology topo = topology(comm, op.group == 0);
    Transport *device = op.group == 0 ? services_.device_transport : device_for(op.group);
    if (device == nullptr)
        topo.device_native = 0; // a group without a communicator of its own is staged
    const bool average = op.op == DT_AVG && reduces(op.kind);
    Args args;
    args.kind = op.kind;
    args.sendbuf = op.sendbuf;
    args.recvbuf = op.recvbuf;
    args.count = op.count;
    args.dtype = op.dtype;
    args.op = op.op == DT_AVG ? DT_SUM : op.op;
    args.root = op.root;
    args.counts = op.counts.empty() ? nullptr : op.counts.data();
    args.name = op.name.c_str();
    args.stream = op.stream;
    args.ready = op.ready.get();
    args.blocking = op.blocking;
    args.whole_job = op.group == 0;
    args.device = device;
    if (const char *path = dispatch(comm, call, topo, args, average, avg_divisor)) {
        if (op.new_group)
            split_device(comm, op);
        return path;
    }
    if (!accepts_memory(op.kind, call.memory))
        throw_error(DT_ERR_UNSUPPORTED, op_kind_name(op.kind), " '", op.name, "': the "
                    "buffers are ", dt_memory_type_name(op.memory), " memory, and no path "
                    "of this build carries ", dt_memory_type_name(op.memory),
                    " memory; copy the data to host memory and pass host buffers");
    if (call.memory == Memory::device && !topo.staging)
        throw_error(DT_ERR_UNSUPPORTED, op_kind_name(op.kind), " '", op.name, "': the "
                    "buffers are device memory, which this context's transport does not "
                    "take and no memory provider can stage through host memory; set "
                    "DISTTRAIN_MEMORY (e.g. cuda) or pass host buffers");
    throw_error(DT_ERR_INTERNAL, "no path runs ", op_kind_name(op.kind), " '", op.name, "'");
}

const char *Router::run_host(algo::Comm &comm, const Args &host)
{
    const Call call{host.kind, host.count * dt_dtype_size(host.dtype), Memory::host};
    const Topology topo = topology(comm, host.whole_job);
    Args args = host;
    const int divisor = host.avg_divisor;
    if (const char *path = dispatch(comm, call, topo, args, divisor > 0, divisor))
        return path;
    throw_error(DT_ERR_INTERNAL, "no host path runs ", op_kind_name(host.kind), " '",
                host.name, "'");
}

const char *Router::run_on_this_host(algo::Comm &comm, const Args &host)
{
    const Call call{host.kind, host.count * dt_dtype_size(host.dtype), Memory::host};
    const Topology topo = topology(comm, host.whole_job);
    if (!applies_to(kShmLocal, call, topo, policy_))
        return nullptr;
    Args args = host;
    args.avg_divisor = 0;
    if (!kShmLocal.run(services_, comm, args))
        return nullptr;
    return kShmLocal.name;
}

bool Router::peer_waits_on_this_host(uint64_t comm_tag) const
{
    return services_.domain != nullptr && shm::peer_published(*services_.domain, comm_tag);
}

namespace {

// float16 averages divide each contribution before the sum (reduce::divide_float16). Host
// memory only: a device call is staged (its host copy comes back through run_host) or
// goes to the device transport, whose NCCL divides floating types first itself.
bool divides_first(const Call &call, const Args &args)
{
    return args.dtype == DT_FLOAT16 && call.memory == Memory::host &&
           (args.kind == OpKind::allreduce || args.kind == OpKind::reduce_scatter);
}

// A call with elements to move but none this time: its paths send nothing, so ordered
// mode's call check would reach no peer (allgatherv and alltoallv agree on their counts
// first, and a barrier sends its messages whatever).
bool sends_nothing(const Call &call, const Args &args)
{
    return call.bytes == 0 && args.kind != OpKind::barrier &&
           args.kind != OpKind::allgatherv && args.kind != OpKind::alltoallv;
}

// Ordered mode's call check travels by the carrier of the path that runs the call, and
// ranks whose calls disagree may take different ones: a rank in shared memory (or in a
// native collective) waits for the others there, while they, point to point (an
// allgatherv, which has neither; an allreduce forced onto ring), wait for its messages,
// each for a check that never reaches it, until the time-out. Such a call therefore
// first meets the others on the carrier that serves the group's other calls.
void meet_on_other_carrier(const Services &s, algo::Comm &comm, const Topology &t,
                           const Args &args)
{
    if (t.size < 2)
        return; // nobody to meet
    if (t.shm && t.spread == Spread::all_local)
        check_on_this_host(s, comm, args);
    else if (t.whole_job && t.native != 0)
        (void)native_check_passes(comm, args); // declined: nothing to meet there
}

} // namespace

void Router::divide_before_sum(const algo::Comm &comm, Args &args, int divisor)
{
    if (args.kind == OpKind::allreduce) {
        // The quotients go to recvbuf, which the sum then reduces in place.
        reduce::divide_float16(args.recvbuf, args.sendbuf, args.count, divisor);
        args.sendbuf = args.recvbuf;
        return;
    }
    // reduce_scatter reads every rank's block, where recvbuf holds this rank's alone.
    const size_t n = args.count * static_cast<size_t>(comm.size());
    divided_.resize(n);
    reduce::divide_float16(divided_.data(), args.sendbuf, n, divisor);
    args.sendbuf = divided_.data();
}

const char *Router::dispatch(algo::Comm &comm, const Call &call, const Topology &topo,
                             Args &args, bool average, int avg_divisor)
{
    // Ordered mode: a rank whose count is 0 while the others' is not (or whose call
    // differs in another way) must fail them promptly, not leave them waiting.
    if (comm.check() != nullptr && comm.size() > 1 && sends_nothing(call, args)) {
        check_over_host(services_, comm, args);
        return "call_check";
    }
    if (average && divides_first(call, args)) {
        divide_before_sum(comm, args, avg_divisor);
        average = false;
    }
    // Once, and not after a native path declined: its check may have run already (and a
    // second shared-memory call would reuse the call's tag).
    bool met = comm.check() == nullptr;
    for (const Path *path : paths_for(args.kind)) {
        if (!applies_to(*path, call, topo, policy_))
            continue;
        if (!met && path->carrier == Carrier::point_to_point)
            meet_on_other_carrier(services_, comm, topo, args);
        met = met || path->carrier == Carrier::point_to_point ||
              path->carrier == Carrier::native;
        args.avg_divisor = average && path->divides_average ? avg_divisor : 0;
        if (!path->run(services_, comm, args))
            continue; // declined at run time: the next that applies
        if (average && !path->divides_average)
            reduce::finish_average(args.recvbuf, args.count, args.dtype, avg_divisor);
        DT_LOG(debug, "routing", op_kind_name(args.kind), " '", args.name, "' (", call.bytes,
               " B, ", topo.size, " ranks, ", call.memory == Memory::device ? "device" : "host",
               " memory): ", path->name);
        return path->name;
    }
    return nullptr;
}

} // namespace dt::routing

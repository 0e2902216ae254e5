// SPDX-License-Identifier: Apache-2.0
// The device transport's native collectives (DISTTRAIN_DEVICE_TRANSPORT=nccl) as a router
// path: device memory over the whole job, ahead of staging. The plugin runs on its own
// stream and knows nothing of the producer's, so the path first waits on the host for
// the event the C API recorded on the producer's stream when the call was made; and it
// carries no control traffic, so ordered mode's call check goes over the host paths.
#include "routing/native_call.h"
#include "routing/paths.h"
#include "routing/router.h"
#include "routing/staging.h"
#include "runtime/call_check.h"

namespace dt::routing {

namespace {

bool applies(const Call &call, const Topology &t, const Policy &)
{
    return call.memory == Memory::device && t.whole_job &&
           (t.device_native & kind_bit(call.kind)) != 0;
}

// Ordered mode: a two-word MAX allreduce of {h, ~h} on the host paths, which carry the
// call's check themselves (a disagreeing rank fails it there with the field named); the
// comparison after it catches what a path that carries only the hash would let through.
void check_over_host(const Services &s, algo::Comm &comm, const Args &a)
{
    const uint64_t h = call_check_hash(*comm.check());
    int64_t words[2] = {static_cast<int64_t>(h), static_cast<int64_t>(~h)};
    Args check;
    check.kind = OpKind::allreduce;
    check.sendbuf = check.recvbuf = words;
    check.count = 2;
    check.dtype = DT_INT64;
    check.op = DT_MAX;
    check.name = a.name;
    check.whole_job = a.whole_job;
    s.router->run_host(comm, check);
    if (static_cast<uint64_t>(words[0]) != h || ~static_cast<uint64_t>(words[1]) != h)
        comm.fail_collective(DT_ERR_MISMATCH,
                             cat(op_kind_name(a.kind), " '", a.name, "': the ranks' call "
                                 "checks of ordered mode (DISTTRAIN_ORDERED=1) disagree: "
                                 "some rank runs another collective or passes other "
                                 "arguments in this call"));
}

bool run(const Services &s, algo::Comm &comm, const Args &a)
{
    // The plugin averages over every rank of its communicator; with ranks joined, the
    // divisor is smaller, and staging divides by it instead.
    if (a.avg_divisor > 0 && a.avg_divisor != comm.size())
        return false;
    if (comm.check() != nullptr)
        check_over_host(s, comm, a);
    if (a.ready != nullptr && s.staging != nullptr) {
        try {
            s.staging->wait_event(a.ready, comm, a.name);
        } catch (const Error &e) {
            comm.fail_collective(e.status(), e.what()); // the peers must not wait for us
        }
    }
    Transport &device = *s.device_transport;
    algo::Comm dc(device, comm.rank(), comm.size(), comm.tag(), comm.deadline(),
                  op_kind_name(a.kind));
    dc.set_cancel(comm.cancel_flag());
    Args args = a;
    if (a.avg_divisor > 0)
        args.op = DT_AVG; // the plugin divides (NCCL's ncclAvg), on the device
    try {
        return run_and_wait(dc, op_kind_name(a.kind), [&](dt_transport_request_t *req) {
            return start_native(device, args, req);
        });
    } catch (const Error &e) {
        // The device transport is aborted already; the host one tells the peers, which
        // may be waiting in a collective of their own that this rank will never join.
        comm.fail_collective(e.status(), e.what());
    }
}

} // namespace

const Path kDeviceNative = {"device_native", memory_bit(Memory::device), Carrier::none,
                            true, applies, run};

} // namespace dt::routing

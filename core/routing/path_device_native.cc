// SPDX-License-Identifier: Apache-2.0
// The device transport's native collectives (DISTTRAIN_DEVICE_TRANSPORT=nccl) as a router
// path: device memory over the whole job, ahead of staging. The plugin runs on its own
// stream, so before it starts a call's collective the path hands it the producer's
// stream for a blocking call (launch_on_stream: the collective runs there), else the event
// the C API recorded on the producer's stream when the call was made (wait_event): the
// plugin's stream waits for it on the device and the host goes straight on. A plugin
// without those members, or one that cannot use the memory provider's streams and events,
// gets the old order: the host waits for the event first (device_wait.h). The path
// carries no control traffic, so ordered mode's call check goes over the host paths. A
// group runs on its own communicator (Router::split_device). A ready batch of device
// allreduces runs here too (Router::run_device_batch): every call's event handed over (or
// waited for) first, then the calls issued between the plugin's batch_begin and batch_end
// and waited for together.
#include "routing/device_wait.h"
#include "routing/host_check.h"
#include "routing/native_call.h"
#include "routing/paths.h"
#include "routing/router.h"
#include "routing/staging.h"
#include "telemetry/log.h"

#include <memory>
#include <vector>

namespace dt::routing {

namespace {

// The whole job, or a group with a communicator of its own (the router leaves
// device_native empty for a group without one).
bool applies(const Call &call, const Topology &t, const Policy &)
{
    return call.memory == Memory::device && (t.device_native & kind_bit(call.kind)) != 0;
}

bool run(const Services &s, algo::Comm &comm, const Args &a)
{
    if (a.device == nullptr)
        return false; // applies() saw the kind in a table that is not this call's
    // The plugin averages over every rank of its communicator; with ranks joined, the
    // divisor is smaller, and staging divides by it instead.
    if (a.avg_divisor > 0 && a.avg_divisor != comm.size())
        return false;
    if (comm.check() != nullptr)
        check_over_host(s, comm, a);
    Transport &device = *a.device;
    // Nothing of this rank's is in flight on the device transport here (each call is
    // waited for before the next), as launch_on_stream and wait_event ask. Should the
    // plugin then decline the call (DTP_ERR_UNSUPPORTED), the wait it queued only holds
    // its later work behind an event that completes anyway, and staging waits for the
    // event itself (or, for a blocking call, copies on the producer's stream).
    if (s.device_wait != nullptr) {
        try {
            if (!a.blocking || !s.device_wait->on_producer_stream(device, a.stream, a.name))
                s.device_wait->before(device, a.stream, a.ready, comm, a.name);
        } catch (const Error &e) {
            comm.fail_collective(e.status(), e.what()); // the peers must not wait for us
        }
    }
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

const char *Router::run_device_batch(algo::Comm &comm, const std::vector<const OpDesc *> &ops,
                                     int avg_divisor)
{
    if (ops.empty() || comm.check() != nullptr)
        return nullptr; // ordered mode checks each call on its own
    const OpDesc &first = *ops.front();
    Transport *device = device_for(first.group);
    if (device == nullptr || (device_native_ & kind_bit(OpKind::allreduce)) == 0)
        return nullptr;
    // NCCL averages over its whole communicator: with ranks joined, staging divides.
    const bool average = first.op == DT_AVG;
    if (average && avg_divisor != comm.size())
        return nullptr;
    // Every buffer's producer first, before batch_begin (no other member may be called
    // inside a batch): the plugin's stream waits for each event, or the host does.
    if (services_.device_wait != nullptr)
        for (const OpDesc *op : ops) {
            try {
                services_.device_wait->before(*device, op->stream, op->ready.get(), comm,
                                              op->name.c_str());
            } catch (const Error &e) {
                comm.fail_collective(e.status(), e.what()); // the peers must not wait
            }
        }
    algo::Comm dc(*device, comm.rank(), comm.size(), comm.tag(), comm.deadline(), "allreduce");
    dc.set_cancel(comm.cancel_flag());
    const dt_transport_v3_t &table = device->ops();
    std::vector<std::unique_ptr<algo::PendingTransfer>> reqs;
    reqs.reserve(ops.size());
    try {
        set_last_error("");
        if (table.batch_begin != nullptr && table.batch_end != nullptr) {
            int32_t rc = table.batch_begin(device->instance());
            if (rc != DTP_OK)
                throw_error(static_cast<dt_status_t>(rc), "device transport '", device->name(),
                            "': batch_begin failed: ", last_error());
        }
        for (const OpDesc *op : ops) {
            Args a;
            a.kind = OpKind::allreduce;
            a.sendbuf = op->sendbuf;
            a.recvbuf = op->recvbuf;
            a.count = op->count;
            a.dtype = op->dtype;
            a.op = op->op; // DT_AVG stays: the plugin divides (ncclAvg)
            a.name = op->name.c_str();
            auto req = std::make_unique<algo::PendingTransfer>();
            req->peer = -1;
            req->raw.status = DTP_INPROGRESS;
            int32_t rc = start_native(*device, a, &req->raw);
            if (rc == DTP_ERR_UNSUPPORTED && reqs.empty()) {
                // The plugin has no such dtype or operator; the batch shares both, so
                // nothing of it was started on any rank: staging runs it.
                if (table.batch_begin != nullptr && table.batch_end != nullptr)
                    table.batch_end(device->instance());
                set_last_error("");
                return nullptr;
            }
            if (rc < 0)
                req->raw.status = rc;
            reqs.push_back(std::move(req));
        }
        if (table.batch_begin != nullptr && table.batch_end != nullptr) {
            int32_t rc = table.batch_end(device->instance());
            if (rc != DTP_OK)
                throw_error(static_cast<dt_status_t>(rc), "device transport '", device->name(),
                            "': batch_end failed: ", last_error());
        }
        for (auto &req : reqs)
            dc.wait(req);
    } catch (const Error &e) {
        comm.fail_collective(e.status(), e.what());
    }
    DT_LOG(debug, "routing", "allreduce batch of ", ops.size(), " device calls from '",
           first.name, "': device_native_batch");
    return "device_native_batch";
}

const Path kDeviceNative = {"device_native", memory_bit(Memory::device), Carrier::none,
                            true, applies, run};

} // namespace dt::routing

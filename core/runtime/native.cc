#include "runtime/native.h"

#include "reduce/reduce.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <memory>

namespace dt {

namespace {

// Starts op on the plugin; DTP_ERR_UNSUPPORTED also when the table has no such member.
int32_t start(const Transport &t, const OpDesc &op, dt_transport_request_t *req)
{
    const dt_transport_v2_t &ops = t.ops();
    void *inst = t.instance();
    const int32_t dtype = op.dtype;
    const int32_t red = op.op == DT_AVG ? DT_SUM : op.op;
    switch (op.kind) {
    case OpKind::allreduce:
        if (ops.allreduce == nullptr)
            break;
        return ops.allreduce(inst, op.sendbuf, op.recvbuf, op.count, dtype, red, req);
    case OpKind::broadcast:
        if (ops.broadcast == nullptr)
            break;
        return ops.broadcast(inst, op.recvbuf, op.count, dtype, op.root, req);
    case OpKind::allgather:
        if (ops.allgather == nullptr)
            break;
        return ops.allgather(inst, op.sendbuf, op.recvbuf, op.count, dtype, req);
    case OpKind::reduce_scatter:
        if (ops.reduce_scatter == nullptr)
            break;
        return ops.reduce_scatter(inst, op.sendbuf, op.recvbuf, op.count, dtype, red, req);
    case OpKind::alltoall:
        if (ops.alltoall == nullptr)
            break;
        return ops.alltoall(inst, op.sendbuf, op.recvbuf, op.count, dtype, req);
    case OpKind::barrier:
        if (ops.barrier == nullptr)
            break;
        return ops.barrier(inst, req);
    case OpKind::join:
        break;
    }
    return DTP_ERR_UNSUPPORTED;
}

} // namespace

bool run_native(algo::Comm &comm, const OpDesc &op, int avg_divisor)
{
    // A group's members would need a communicator of their own; the plugin ABI's
    // collectives span every rank.
    if (op.group != 0)
        return false;
    auto req = std::make_unique<algo::PendingTransfer>();
    req->peer = -1; // the whole job: Comm names the native collective in its errors
    req->raw.status = DTP_INPROGRESS;
    set_last_error("");
    int32_t rc = start(comm.transport(), op, &req->raw);
    if (rc == DTP_ERR_UNSUPPORTED) {
        set_last_error("");
        return false;
    }
    if (rc < 0) {
        DT_LOG(error, "runtime", op_kind_name(op.kind), " '", op.name, "': native ",
               op_kind_name(op.kind), " of transport '", comm.transport().name(),
               "' failed to start: ", last_error());
        req->raw.status = rc;
    }
    comm.wait(req);
    if (op.op == DT_AVG && (op.kind == OpKind::allreduce || op.kind == OpKind::reduce_scatter))
        reduce::finish_average(op.recvbuf, op.count, op.dtype, avg_divisor);
    return true;
}

} // namespace dt

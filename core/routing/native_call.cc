// SPDX-License-Identifier: Apache-2.0
#include "routing/native_call.h"

namespace dt::routing {

int32_t start_native(const Transport &t, const Args &a, dt_transport_request_t *req)
{
    const dt_transport_v3_t &ops = t.ops();
    void *inst = t.instance();
    const int32_t dtype = a.dtype;
    const int32_t red = a.op;
    switch (a.kind) {
    case OpKind::allreduce:
        if (ops.allreduce == nullptr)
            break;
        return ops.allreduce(inst, a.sendbuf, a.recvbuf, a.count, dtype, red, req);
    case OpKind::broadcast:
        if (ops.broadcast == nullptr)
            break;
        return ops.broadcast(inst, a.recvbuf, a.count, dtype, a.root, req);
    case OpKind::allgather:
        if (ops.allgather == nullptr)
            break;
        return ops.allgather(inst, a.sendbuf, a.recvbuf, a.count, dtype, req);
    case OpKind::reduce_scatter:
        if (ops.reduce_scatter == nullptr)
            break;
        return ops.reduce_scatter(inst, a.sendbuf, a.recvbuf, a.count, dtype, red, req);
    case OpKind::alltoall:
        if (ops.alltoall == nullptr)
            break;
        return ops.alltoall(inst, a.sendbuf, a.recvbuf, a.count, dtype, req);
    case OpKind::barrier:
        if (ops.barrier == nullptr)
            break;
        return ops.barrier(inst, req);
    case OpKind::join:
    case OpKind::allgatherv: // no transport has uneven collectives in its table
    case OpKind::alltoallv:
        break;
    }
    return DTP_ERR_UNSUPPORTED;
}

} // namespace dt::routing

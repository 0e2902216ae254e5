#include "runtime/execute.h"

#include "algorithms/algorithms.h"
#include "runtime/error.h"

#include <cstring>

namespace dt {

void execute(Transport &transport, const OpDesc &op, int rank, int size, uint64_t tag,
             algo::Clock::time_point deadline)
{
    algo::Comm comm(transport, rank, size, tag, deadline, op_kind_name(op.kind));
    const size_t esize = dt_dtype_size(op.dtype);
    switch (op.kind) {
    case OpKind::allreduce:
        algo::allreduce(comm, {op.sendbuf, op.recvbuf, op.count, op.dtype, op.op});
        return;
    case OpKind::broadcast:
        algo::broadcast(comm, op.recvbuf, op.count * esize, op.root);
        return;
    case OpKind::allgather:
        algo::allgather_ring(comm, op.sendbuf, op.recvbuf, op.count * esize);
        return;
    case OpKind::reduce_scatter:
        algo::reduce_scatter_ring(comm, op.sendbuf, op.recvbuf, op.count, op.dtype, op.op);
        return;
    case OpKind::alltoall:
        algo::alltoall_pairwise(comm, op.sendbuf, op.recvbuf, op.count * esize);
        return;
    case OpKind::barrier:
        algo::barrier_dissemination(comm);
        return;
    }
    throw_error(DT_ERR_INTERNAL, "unknown collective kind ", static_cast<int>(op.kind));
}

} // namespace dt

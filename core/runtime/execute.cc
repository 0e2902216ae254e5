#include "runtime/execute.h"

#include "algorithms/algorithms.h"
#include "reduce/reduce.h"
#include "runtime/error.h"
#include "runtime/native.h"
#include "shm/attach.h"
#include "shm/route.h"

#include <cstring>
#include <limits>

namespace dt {

namespace {

// Ranks on one host meet in shared memory when the context has a domain (core/shm);
// false when it has none or the members span hosts in a way shm does not serve.
bool run_shared_memory(algo::Comm &comm, const OpDesc &op, int avg_divisor)
{
    shm::Domain *domain = shm::domain_of(comm.transport());
    if (domain == nullptr)
        return false;
    static_assert(static_cast<int>(OpKind::barrier) == 5, "kKinds follows OpKind");
    static constexpr shm::Kind kKinds[] = {shm::Kind::allreduce, shm::Kind::broadcast,
                                           shm::Kind::allgather, shm::Kind::reduce_scatter,
                                           shm::Kind::alltoall, shm::Kind::barrier};
    shm::Call call;
    call.kind = kKinds[static_cast<int>(op.kind)];
    call.sendbuf = op.sendbuf;
    call.recvbuf = op.recvbuf;
    call.count = op.count;
    call.dtype = op.dtype;
    call.op = op.op == DT_AVG ? DT_SUM : op.op;
    call.avg_divisor = op.op == DT_AVG ? avg_divisor : 0;
    call.root = op.root;
    call.name = op_kind_name(op.kind);
    return shm::run(*domain, comm, call);
}

// Whether the plugin's table has a native member for this kind. Asked first, so that a
// transport without native collectives (tcp) costs nothing here: run_native allocates a
// request per call, which a small collective on shared memory would notice.
bool offers_native(const Transport &t, OpKind kind)
{
    const dt_transport_v2_t &ops = t.ops();
    switch (kind) {
    case OpKind::allreduce: return ops.allreduce != nullptr;
    case OpKind::broadcast: return ops.broadcast != nullptr;
    case OpKind::allgather: return ops.allgather != nullptr;
    case OpKind::reduce_scatter: return ops.reduce_scatter != nullptr;
    case OpKind::alltoall: return ops.alltoall != nullptr;
    case OpKind::barrier: return ops.barrier != nullptr;
    case OpKind::join: return false;
    }
    return false;
}

} // namespace

void run_collective(algo::Comm &comm, const OpDesc &op, int avg_divisor)
{
    // A transport with native collectives (MPI) runs them itself; the algorithms below
    // serve the others, and the calls a native transport declines.
    if (offers_native(comm.transport(), op.kind) && run_native(comm, op, avg_divisor))
        return;
    if (op.kind != OpKind::join && run_shared_memory(comm, op, avg_divisor))
        return;
    const size_t esize = dt_dtype_size(op.dtype);
    switch (op.kind) {
    case OpKind::allreduce: {
        dt_reduce_op_t red = op.op == DT_AVG ? DT_SUM : op.op;
        algo::allreduce(comm, {op.sendbuf, op.recvbuf, op.count, op.dtype, red});
        if (op.op == DT_AVG)
            reduce::finish_average(op.recvbuf, op.count, op.dtype, avg_divisor);
        return;
    }
    case OpKind::broadcast: {
        // The root receives nothing in a broadcast, so two ranks that each take
        // themselves for the root would both succeed. With a call check, every rank also
        // sends it to the next rank: a ring that reaches every rank whatever its view.
        algo::Request from_left, to_right;
        if (comm.check() != nullptr && comm.size() > 1) {
            const int n = comm.size();
            from_left = comm.irecv((comm.rank() + n - 1) % n, nullptr, 0);
            to_right = comm.isend((comm.rank() + 1) % n, nullptr, 0);
        }
        algo::broadcast(comm, op.recvbuf, op.count * esize, op.root);
        comm.wait(from_left);
        comm.wait(to_right);
        return;
    }
    case OpKind::allgather:
        algo::allgather_ring(comm, op.sendbuf, op.recvbuf, op.count * esize);
        return;
    case OpKind::reduce_scatter: {
        dt_reduce_op_t red = op.op == DT_AVG ? DT_SUM : op.op;
        algo::reduce_scatter_ring(comm, op.sendbuf, op.recvbuf, op.count, op.dtype, red);
        if (op.op == DT_AVG)
            reduce::finish_average(op.recvbuf, op.count, op.dtype, avg_divisor);
        return;
    }
    case OpKind::alltoall:
        algo::alltoall_pairwise(comm, op.sendbuf, op.recvbuf, op.count * esize);
        return;
    case OpKind::barrier:
        algo::barrier_dissemination(comm);
        return;
    case OpKind::join:
        break;
    }
    throw_error(DT_ERR_INTERNAL, "run_collective: not a collective: ", op_kind_name(op.kind));
}

namespace {

template <typename T>
void fill(void *buf, size_t count, T value)
{
    T *p = static_cast<T *>(buf);
    for (size_t i = 0; i < count; ++i)
        p[i] = value;
}

template <typename T>
void fill_typed(void *buf, size_t count, dt_reduce_op_t op)
{
    using L = std::numeric_limits<T>;
    switch (op) {
    case DT_PROD: fill<T>(buf, count, T(1)); return;
    case DT_MIN: fill<T>(buf, count, L::has_infinity ? L::infinity() : L::max()); return;
    case DT_MAX: fill<T>(buf, count, L::has_infinity ? -L::infinity() : L::lowest()); return;
    default: fill<T>(buf, count, T(0)); return;
    }
}

// float16 and bfloat16 bit patterns of 0, 1, +inf and -inf.
void fill_half(void *buf, size_t count, dt_reduce_op_t op, uint16_t one, uint16_t inf)
{
    switch (op) {
    case DT_PROD: fill<uint16_t>(buf, count, one); return;
    case DT_MIN: fill<uint16_t>(buf, count, inf); return;
    case DT_MAX: fill<uint16_t>(buf, count, static_cast<uint16_t>(inf | 0x8000)); return;
    default: fill<uint16_t>(buf, count, 0); return;
    }
}

} // namespace

void fill_identity(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op)
{
    switch (dtype) {
    case DT_FLOAT32: fill_typed<float>(buf, count, op); return;
    case DT_FLOAT64: fill_typed<double>(buf, count, op); return;
    case DT_FLOAT16: fill_half(buf, count, op, 0x3C00, 0x7C00); return;
    case DT_BFLOAT16: fill_half(buf, count, op, 0x3F80, 0x7F80); return;
    case DT_INT8: fill_typed<int8_t>(buf, count, op); return;
    case DT_UINT8: fill_typed<uint8_t>(buf, count, op); return;
    case DT_INT32: fill_typed<int32_t>(buf, count, op); return;
    case DT_INT64: fill_typed<int64_t>(buf, count, op); return;
    default: break;
    }
    throw_error(DT_ERR_INTERNAL, "fill_identity: unknown dtype ", static_cast<int>(dtype));
}

} // namespace dt

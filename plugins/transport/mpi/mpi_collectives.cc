// SPDX-License-Identifier: Apache-2.0
// Native collectives: MPI's non-blocking ones on a communicator of their own, completed
// through progress like point-to-point requests. A call MPI cannot take as asked (avg,
// counts beyond an int, buffers that overlap in a way MPI forbids) returns
// DTP_ERR_UNSUPPORTED and the core runs its own algorithm for that call; the answer
// depends only on the arguments, which every rank shares, so all ranks agree.
#include "mpi_context.h"

#include "mpi_error.h"
#include "mpi_request.h"
#include "mpi_types.h"

#include <climits>
#include <cstdint>

namespace dt::mpi {
namespace {

bool fits_int(size_t n) { return n <= static_cast<size_t>(INT_MAX); }

bool overlap(const void *a, size_t alen, const void *b, size_t blen) {
    auto x = reinterpret_cast<uintptr_t>(a);
    auto y = reinterpret_cast<uintptr_t>(b);
    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

} // namespace

int32_t Context::start_collective(MPI_Request r, const char *what, dt_transport_request_t *req,
                                  size_t bytes) {
    auto p = std::make_unique<Pending>();
    p->kind = Kind::collective;
    p->what = what;
    p->req = req;
    p->done_bytes = bytes;
    p->posted = true;
    p->mpi.push_back(r);
    pending_.push_back(std::move(p));
    return DTP_INPROGRESS;
}

int32_t Context::allreduce(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                           int32_t op, dt_transport_request_t *req) {
    TypeInfo t = datatype_of(dtype);
    if (t.size == 0 || !fits_int(count) || (sendbuf != recvbuf &&
                                            overlap(sendbuf, count * t.size, recvbuf,
                                                    count * t.size))) {
        return DTP_ERR_UNSUPPORTED;
    }
    MPI_Op mop = op_of(dtype, op);
    if (mop == MPI_OP_NULL) return DTP_ERR_UNSUPPORTED;
    start_request(req, -1);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    const void *src = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    check(MPI_Iallreduce(src, recvbuf, static_cast<int>(count), t.type, mop,
                         tags_->collectives(), &r),
          "MPI_Iallreduce");
    return start_collective(r, "MPI_Iallreduce", req, count * t.size);
}

int32_t Context::broadcast(void *buf, size_t count, int32_t dtype, int32_t root,
                           dt_transport_request_t *req) {
    TypeInfo t = datatype_of(dtype);
    if (t.size == 0 || !fits_int(count) || root < 0 || root >= size_) return DTP_ERR_UNSUPPORTED;
    start_request(req, root);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibcast(buf, static_cast<int>(count), t.type, root, tags_->collectives(), &r),
          "MPI_Ibcast");
    return start_collective(r, "MPI_Ibcast", req, count * t.size);
}

int32_t Context::allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           int32_t dtype, dt_transport_request_t *req) {
    TypeInfo t = datatype_of(dtype);
    if (t.size == 0 || !fits_int(sendcount) || !fits_int(sendcount * size_)) {
        return DTP_ERR_UNSUPPORTED;
    }
    const size_t block = sendcount * t.size;
    const void *own = static_cast<const char *>(recvbuf) + block * static_cast<size_t>(rank_);
    const void *src = sendbuf;
    if (sendbuf == own) {
        src = MPI_IN_PLACE;
    } else if (overlap(sendbuf, block, recvbuf, block * static_cast<size_t>(size_))) {
        return DTP_ERR_UNSUPPORTED;
    }
    start_request(req, -1);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Iallgather(src, static_cast<int>(sendcount), t.type, recvbuf,
                         static_cast<int>(sendcount), t.type, tags_->collectives(), &r),
          "MPI_Iallgather");
    return start_collective(r, "MPI_Iallgather", req, block * static_cast<size_t>(size_));
}

int32_t Context::reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                int32_t dtype, int32_t op, dt_transport_request_t *req) {
    TypeInfo t = datatype_of(dtype);
    if (t.size == 0 || !fits_int(recvcount) || !fits_int(recvcount * size_) ||
        overlap(sendbuf, recvcount * t.size * static_cast<size_t>(size_), recvbuf,
                recvcount * t.size)) {
        return DTP_ERR_UNSUPPORTED;
    }
    MPI_Op mop = op_of(dtype, op);
    if (mop == MPI_OP_NULL) return DTP_ERR_UNSUPPORTED;
    start_request(req, -1);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ireduce_scatter_block(sendbuf, recvbuf, static_cast<int>(recvcount), t.type,
                                    mop, tags_->collectives(), &r),
          "MPI_Ireduce_scatter_block");
    return start_collective(r, "MPI_Ireduce_scatter_block", req, recvcount * t.size);
}

int32_t Context::alltoall(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                          dt_transport_request_t *req) {
    TypeInfo t = datatype_of(dtype);
    const size_t total = count * t.size * static_cast<size_t>(size_);
    if (t.size == 0 || !fits_int(count) || !fits_int(count * size_) ||
        overlap(sendbuf, total, recvbuf, total)) {
        return DTP_ERR_UNSUPPORTED;
    }
    start_request(req, -1);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ialltoall(sendbuf, static_cast<int>(count), t.type, recvbuf,
                        static_cast<int>(count), t.type, tags_->collectives(), &r),
          "MPI_Ialltoall");
    return start_collective(r, "MPI_Ialltoall", req, total);
}

int32_t Context::barrier(dt_transport_request_t *req) {
    start_request(req, -1);
    if (aborted_) return complete_request(req, DTP_ERR_ABORTED, 0), DTP_ERR_ABORTED;
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(tags_->collectives(), &r), "MPI_Ibarrier");
    return start_collective(r, "MPI_Ibarrier", req, 0);
}

} // namespace dt::mpi

// SPDX-License-Identifier: Apache-2.0
// Native collectives: NCCL's, queued on the plugin's stream (which waits on the GPU for
// the producer's event the core hands over first, nccl_wait.cc) and completed through
// progress. Every DTP dtype has an NCCL type and every
// DTP operator an NCCL one (AVG is ncclAvg); a value outside them is DTP_ERR_UNSUPPORTED
// for that call. Buffers are device memory: the query answers native_memory DEVICE only,
// so the core never hands this transport a host pointer here.
#include "nccl_context.h"

#include "plugin_request.h"

#include <string>

namespace dt::nccl {
namespace {

struct Type {
    ncclDataType_t type;
    size_t size; // 0: NCCL has no such type
};

Type type_of(int32_t dtype) {
    switch (dtype) {
    case DTP_FLOAT32: return {ncclFloat32, 4};
    case DTP_FLOAT64: return {ncclFloat64, 8};
    case DTP_FLOAT16: return {ncclFloat16, 2};
    case DTP_BFLOAT16: return {ncclBfloat16, 2};
    case DTP_INT8: return {ncclInt8, 1};
    case DTP_UINT8: return {ncclUint8, 1};
    case DTP_INT32: return {ncclInt32, 4};
    case DTP_INT64: return {ncclInt64, 8};
    default: return {ncclFloat32, 0};
    }
}

bool op_of(int32_t op, ncclRedOp_t *out) {
    switch (op) {
    case DTP_SUM: *out = ncclSum; return true;
    case DTP_PROD: *out = ncclProd; return true;
    case DTP_MIN: *out = ncclMin; return true;
    case DTP_MAX: *out = ncclMax; return true;
    case DTP_AVG: *out = ncclAvg; return true;
    default: return false;
    }
}

// On a one-rank communicator the average is the sum (x / 1): asking NCCL for the sum
// avoids its one-rank average kernel, which before 2.29.7 leaves the last count % 32
// elements unwritten (NCCL's issue 1950; seen here with NCCL 2.28.9 on an H100).
ncclRedOp_t for_size(ncclRedOp_t op, int size) {
    return op == ncclAvg && size == 1 ? ncclSum : op;
}

} // namespace

// The checks every collective shares; the message goes to the core with the status.
#define NCCL_TYPE_OR_REFUSE(t, dtype, what)                                                \
    Type t = type_of(dtype);                                                               \
    if (t.size == 0) {                                                                     \
        host_.set_error(std::string("nccl: ") + what + ": dtype " + std::to_string(dtype) + \
                        " has no NCCL type");                                              \
        return DTP_ERR_UNSUPPORTED;                                                        \
    }

#define NCCL_OP_OR_REFUSE(r, op, what)                                                     \
    ncclRedOp_t r = ncclSum;                                                               \
    if (!op_of(op, &r)) {                                                                  \
        host_.set_error(std::string("nccl: ") + what + ": reduction operator " +           \
                        std::to_string(op) + " has no NCCL operator");                     \
        return DTP_ERR_UNSUPPORTED;                                                        \
    }

int32_t Context::allreduce(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                           int32_t op, dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    NCCL_TYPE_OR_REFUSE(t, dtype, "allreduce")
    NCCL_OP_OR_REFUSE(r, op, "allreduce")
    return submit(req, "ncclAllReduce", count * t.size, stream, [=, this](cudaStream_t s) {
        return lib_.nccl.AllReduce(sendbuf, recvbuf, count, t.type, for_size(r, size_), comm_, s);
    });
}

int32_t Context::broadcast(void *buf, size_t count, int32_t dtype, int32_t root,
                           dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    NCCL_TYPE_OR_REFUSE(t, dtype, "broadcast")
    if (root < 0 || root >= size_) {
        host_.set_error("nccl: broadcast: root " + std::to_string(root) + " is not a rank of " +
                        std::to_string(size_));
        return DTP_ERR_INVALID_ARGUMENT;
    }
    int32_t rc = submit(req, "ncclBroadcast", count * t.size, stream, [=, this](cudaStream_t s) {
        return lib_.nccl.Broadcast(buf, buf, count, t.type, root, comm_, s);
    });
    if (req->status == DTP_INPROGRESS) req->peer = root;
    return rc;
}

int32_t Context::allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           int32_t dtype, dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    NCCL_TYPE_OR_REFUSE(t, dtype, "allgather")
    return submit(req, "ncclAllGather", sendcount * t.size * static_cast<size_t>(size_), stream,
                  [=, this](cudaStream_t s) {
                      return lib_.nccl.AllGather(sendbuf, recvbuf, sendcount, t.type, comm_, s);
                  });
}

int32_t Context::reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                int32_t dtype, int32_t op, dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    NCCL_TYPE_OR_REFUSE(t, dtype, "reduce_scatter")
    NCCL_OP_OR_REFUSE(r, op, "reduce_scatter")
    return submit(req, "ncclReduceScatter", recvcount * t.size, stream,
                  [=, this](cudaStream_t s) {
        return lib_.nccl.ReduceScatter(sendbuf, recvbuf, recvcount, t.type, for_size(r, size_),
                                       comm_, s);
    });
}

// One ncclSend and one ncclRecv per peer in a group: NCCL runs them together.
int32_t Context::alltoall(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                          dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    NCCL_TYPE_OR_REFUSE(t, dtype, "alltoall")
    const size_t block = count * t.size;
    return submit(req, "alltoall (grouped ncclSend/ncclRecv)",
                  block * static_cast<size_t>(size_), stream, [=, this](cudaStream_t s) {
        ncclResult_t rc = lib_.nccl.GroupStart();
        if (rc != ncclSuccess) return rc;
        ncclResult_t first = ncclSuccess;
        for (int p = 0; p < size_ && first == ncclSuccess; ++p) {
            const char *src = static_cast<const char *>(sendbuf) + block * static_cast<size_t>(p);
            char *dst = static_cast<char *>(recvbuf) + block * static_cast<size_t>(p);
            first = lib_.nccl.Send(src, count, t.type, p, comm_, s);
            if (first == ncclSuccess) {
                first = lib_.nccl.Recv(dst, count, t.type, p, comm_, s);
            }
        }
        rc = lib_.nccl.GroupEnd(); // always, to close the group
        return first != ncclSuccess && first != ncclInProgress ? first : rc;
    });
}

// A one-element allreduce on the plugin's device scratch element.
int32_t Context::barrier(dt_transport_request_t *req) {
    const cudaStream_t stream = take_launch_stream();
    return submit(req, "ncclAllReduce (barrier)", 0, stream, [this](cudaStream_t s) {
        return lib_.nccl.AllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, s);
    });
}

} // namespace dt::nccl

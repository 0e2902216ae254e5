// SPDX-License-Identifier: Apache-2.0
// dt_<collective>[_async][_ex]: argument checks, then a queued operation. Every form is
// the asynchronous _ex one: the forms without _ex pass no params (host memory), and a
// blocking form is the asynchronous one followed by a wait, so all take the same path.
#include "capi/guard.h"
#include "runtime/buffer_memory.h"
#include "runtime/enum_value.h"

#include <cstdint>
#include <limits>

using dt::capi::guard;
using dt::capi::require;
using dt::OpDesc;
using dt::OpKind;
using dt::throw_error;

namespace {

// Set while a blocking collective submits its operation: the engine can start it at once
// (on this thread, in ordered mode) instead of waiting for the cycle timer to gather
// more, and the operation lands here rather than in a request handle that the blocking
// form would only free again (a small collective on shared memory feels every malloc).
thread_local std::shared_ptr<dt::Operation> *tls_blocking_op = nullptr;

// The entry point the caller used, for its errors: a blocking form runs the asynchronous
// one's checks, and the message must name the function the caller wrote.
const char *entry_name(const char *blocking_form, const char *async_form)
{
    return tls_blocking_op != nullptr ? blocking_form : async_form;
}

bool overlap(const void *a, size_t a_len, const void *b, size_t b_len)
{
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return a_len > 0 && b_len > 0 && pa < pb + b_len && pb < pa + a_len;
}

// Bytes of `count` elements times `blocks`, refusing counts that are negative numbers in
// disguise and products that overflow.
size_t checked_bytes(const char *fn, size_t count, dt_dtype_t dtype, size_t blocks)
{
    if (count > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": count ", count,
                    " is too large (a negative number converted to size_t?); pass the "
                    "number of elements, >= 0");
    size_t esize = dt_dtype_size(dtype);
    size_t bytes = 0;
    if (__builtin_mul_overflow(count, esize, &bytes) ||
        __builtin_mul_overflow(bytes, blocks, &bytes))
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": count ", count, " of ",
                    dt_dtype_name(dtype), " times ", blocks,
                    " blocks overflows the address space");
    return bytes;
}

// By reference and through enum_value: a C caller may pass any int, and loading it as
// the enum would be undefined behaviour before the check could refuse it.
void check_dtype(const char *fn, const dt_dtype_t &dtype)
{
    const int d = dt::enum_value(dtype);
    if (d < 0 || d >= DT_DTYPE_COUNT_)
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": dtype ", d,
                    " is not a dt_dtype_t; use DT_FLOAT32 ... DT_INT64");
}

void check_op(const char *fn, const dt_reduce_op_t &op)
{
    const int o = dt::enum_value(op);
    if (o < 0 || o >= DT_REDUCE_OP_COUNT_)
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": op ", o,
                    " is not a dt_reduce_op_t; use DT_SUM, DT_AVG, DT_MIN, DT_MAX or "
                    "DT_PROD");
}

void require_buffer(const void *buf, size_t bytes, const char *fn, const char *what)
{
    if (buf == nullptr && bytes > 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": ", what, " is NULL but ", bytes,
                    " bytes are to be transferred");
}

void refuse_overlap(const char *fn, bool overlapping, const char *what)
{
    if (overlapping)
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": sendbuf and recvbuf overlap; ", what);
}

dt_status_t submit(dt_context_h ctx, const char *fn, OpDesc desc, dt_request_h *req)
{
    // Where the producer's stream stands now, on the caller's thread: the engine may
    // run the call much later, and its copies must not wait for work queued meanwhile.
    // A blocking call records none: its caller queues nothing on the stream until the
    // call returns, so the paths may use the stream itself (the device transport then
    // runs the collective on it: routing/device_wait.h).
    if (desc.memory == DT_MEMORY_DEVICE && tls_blocking_op == nullptr)
        if (const auto *provider = ctx->impl->world().memory_provider())
            desc.ready = provider->ready_event(desc.stream);
    if (tls_blocking_op != nullptr) {
        // A small blocking call runs on this thread at once: start fetching the first
        // lines of its buffers now, so that their cache misses overlap the call path
        // instead of stalling the shared-memory exchange.
        // Device memory is not the CPU's to touch, not even with a prefetch hint.
        const size_t bytes =
            desc.memory == DT_MEMORY_HOST ? desc.count * dt_dtype_size(desc.dtype) : 0;
        for (size_t off = 0; off < bytes && off < 256; off += 64) {
            if (desc.sendbuf != nullptr)
                __builtin_prefetch(static_cast<const char *>(desc.sendbuf) + off, 0);
            if (desc.recvbuf != nullptr)
                __builtin_prefetch(static_cast<const char *>(desc.recvbuf) + off, 1);
        }
        desc.blocking = true;
        *tls_blocking_op = ctx->impl->submit(std::move(desc));
        return DT_OK;
    }
    require(req, fn, "req");
    auto handle = std::make_unique<dt_request>();
    handle->op = ctx->impl->submit(std::move(desc));
    *req = handle.release();
    return DT_OK;
}

// The blocking form: the asynchronous one (same checks, same path), then a wait.
template <typename Async, typename... Args>
dt_status_t blocking(Async async, Args... args)
{
    std::shared_ptr<dt::Operation> op;
    dt_request_h unused = nullptr;
    tls_blocking_op = &op;
    dt_status_t status = async(args..., &unused);
    tls_blocking_op = nullptr;
    if (status != DT_OK)
        return status;
    return guard([&] {
        op->wait(std::chrono::milliseconds(-1));
        dt_status_t result = op->status();
        if (result != DT_OK)
            dt::set_last_error(op->message());
        return result;
    });
}

OpDesc describe(OpKind kind, const char *name, const void *send, void *recv, size_t count,
                dt_dtype_t dtype, const dt::BufferMemory &memory, dt_reduce_op_t op = DT_SUM,
                int root = 0)
{
    OpDesc d;
    d.kind = kind;
    d.name = name != nullptr ? name : "";
    d.sendbuf = send;
    d.recvbuf = recv;
    d.count = count;
    d.dtype = dtype;
    d.op = op;
    d.root = root;
    d.memory = memory.type;
    d.device = memory.device;
    d.stream = memory.stream;
    return d;
}

// Where the call's buffers live (runtime/buffer_memory.h), or its error, at once.
dt::BufferMemory memory_of(dt_context_h ctx, const char *fn, const char *name,
                           const dt_op_params_t *params, const void *sendbuf,
                           const void *recvbuf)
{
    return dt::resolve_buffer_memory(fn, name, params, {sendbuf, recvbuf},
                                     {"sendbuf", "recvbuf"},
                                     ctx->impl->world().memory_classifier());
}

// The sum of n counts (each checked as checked_bytes does), refusing a NULL array and a
// sum whose bytes overflow; returns the sum in elements.
size_t checked_sum(const char *fn, const char *what, const size_t *counts, size_t n,
                   dt_dtype_t dtype)
{
    if (counts == nullptr)
        throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": ", what, " is NULL; pass one count "
                    "per rank of the context (", n, ")");
    size_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
        if (counts[i] > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
            throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": ", what, "[", i, "] = ", counts[i],
                        " is too large (a negative number converted to size_t?); pass "
                        "numbers of elements, >= 0");
        if (__builtin_add_overflow(sum, counts[i], &sum))
            throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": the sum of ", what,
                        " overflows size_t");
    }
    checked_bytes(fn, sum, dtype, 1);
    return sum;
}

} // namespace

extern "C" {

DT_API dt_status_t dt_allreduce_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf, size_t count,
                                         dt_dtype_t dtype, dt_reduce_op_t op,
                                         const dt_op_params_t *params, dt_request_h *req)
{
    const char *fn = entry_name("dt_allreduce", "dt_allreduce_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        check_op(fn, op);
        size_t bytes = checked_bytes(fn, count, dtype, 1);
        require_buffer(sendbuf, bytes, fn, "sendbuf");
        require_buffer(recvbuf, bytes, fn, "recvbuf");
        refuse_overlap(fn, sendbuf != recvbuf && overlap(sendbuf, bytes, recvbuf, bytes),
                       "pass the same pointer for an in-place allreduce");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        return submit(ctx, fn,
                      describe(OpKind::allreduce, name, sendbuf, recvbuf, count, dtype,
                               memory, op),
                      req);
    });
}

DT_API dt_status_t dt_allreduce_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf, size_t count,
                                      dt_dtype_t dtype, dt_reduce_op_t op, dt_request_h *req)
{
    return dt_allreduce_async_ex(ctx, name, sendbuf, recvbuf, count, dtype, op, nullptr, req);
}

DT_API dt_status_t dt_allreduce_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t count, dt_dtype_t dtype,
                                   dt_reduce_op_t op, const dt_op_params_t *params)
{
    return blocking(dt_allreduce_async_ex, ctx, name, sendbuf, recvbuf, count, dtype, op,
                    params);
}

DT_API dt_status_t dt_allreduce(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, size_t count, dt_dtype_t dtype,
                                dt_reduce_op_t op)
{
    return dt_allreduce_ex(ctx, name, sendbuf, recvbuf, count, dtype, op, nullptr);
}

DT_API dt_status_t dt_broadcast_async_ex(dt_context_h ctx, const char *name, void *buf,
                                         size_t count, dt_dtype_t dtype, int root,
                                         const dt_op_params_t *params, dt_request_h *req)
{
    const char *fn = entry_name("dt_broadcast", "dt_broadcast_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        size_t bytes = checked_bytes(fn, count, dtype, 1);
        require_buffer(buf, bytes, fn, "buf");
        int size = ctx->impl->size();
        if (root < 0 || root >= size)
            throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": root ", root,
                        " is not a rank of this context; use 0 <= root < ", size);
        auto memory = dt::resolve_buffer_memory(fn, name, params, {buf}, {"buf"},
                                                ctx->impl->world().memory_classifier());
        return submit(ctx, fn,
                      describe(OpKind::broadcast, name, buf, buf, count, dtype, memory,
                               DT_SUM, root),
                      req);
    });
}

DT_API dt_status_t dt_broadcast_async(dt_context_h ctx, const char *name, void *buf,
                                      size_t count, dt_dtype_t dtype, int root,
                                      dt_request_h *req)
{
    return dt_broadcast_async_ex(ctx, name, buf, count, dtype, root, nullptr, req);
}

DT_API dt_status_t dt_broadcast_ex(dt_context_h ctx, const char *name, void *buf,
                                   size_t count, dt_dtype_t dtype, int root,
                                   const dt_op_params_t *params)
{
    return blocking(dt_broadcast_async_ex, ctx, name, buf, count, dtype, root, params);
}

DT_API dt_status_t dt_broadcast(dt_context_h ctx, const char *name, void *buf,
                                size_t count, dt_dtype_t dtype, int root)
{
    return dt_broadcast_ex(ctx, name, buf, count, dtype, root, nullptr);
}

DT_API dt_status_t dt_allgather_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf,
                                         size_t sendcount, dt_dtype_t dtype,
                                         const dt_op_params_t *params, dt_request_h *req)
{
    const char *fn = entry_name("dt_allgather", "dt_allgather_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        size_t size = static_cast<size_t>(ctx->impl->size());
        size_t block = checked_bytes(fn, sendcount, dtype, 1);
        size_t total = checked_bytes(fn, sendcount, dtype, size);
        require_buffer(sendbuf, block, fn, "sendbuf");
        require_buffer(recvbuf, total, fn, "recvbuf");
        const void *in_place =
            static_cast<char *>(recvbuf) + block * static_cast<size_t>(ctx->impl->rank());
        refuse_overlap(fn, sendbuf != in_place && overlap(sendbuf, block, recvbuf, total),
                       "for an in-place allgather pass sendbuf = recvbuf + rank * "
                       "sendcount elements");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        return submit(ctx, fn,
                      describe(OpKind::allgather, name, sendbuf, recvbuf, sendcount, dtype,
                               memory),
                      req);
    });
}

DT_API dt_status_t dt_allgather_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf, size_t sendcount,
                                      dt_dtype_t dtype, dt_request_h *req)
{
    return dt_allgather_async_ex(ctx, name, sendbuf, recvbuf, sendcount, dtype, nullptr,
                                 req);
}

DT_API dt_status_t dt_allgather_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t sendcount, dt_dtype_t dtype,
                                   const dt_op_params_t *params)
{
    return blocking(dt_allgather_async_ex, ctx, name, sendbuf, recvbuf, sendcount, dtype,
                    params);
}

DT_API dt_status_t dt_allgather(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, size_t sendcount, dt_dtype_t dtype)
{
    return dt_allgather_ex(ctx, name, sendbuf, recvbuf, sendcount, dtype, nullptr);
}

DT_API dt_status_t dt_reduce_scatter_async_ex(dt_context_h ctx, const char *name,
                                              const void *sendbuf, void *recvbuf,
                                              size_t recvcount, dt_dtype_t dtype,
                                              dt_reduce_op_t op,
                                              const dt_op_params_t *params,
                                              dt_request_h *req)
{
    const char *fn = entry_name("dt_reduce_scatter", "dt_reduce_scatter_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        check_op(fn, op);
        size_t size = static_cast<size_t>(ctx->impl->size());
        size_t block = checked_bytes(fn, recvcount, dtype, 1);
        size_t total = checked_bytes(fn, recvcount, dtype, size);
        require_buffer(sendbuf, total, fn, "sendbuf");
        require_buffer(recvbuf, block, fn, "recvbuf");
        refuse_overlap(fn, overlap(sendbuf, total, recvbuf, block),
                       "reduce_scatter needs separate buffers");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        return submit(ctx, fn,
                      describe(OpKind::reduce_scatter, name, sendbuf, recvbuf, recvcount,
                               dtype, memory, op),
                      req);
    });
}

DT_API dt_status_t dt_reduce_scatter_async(dt_context_h ctx, const char *name,
                                           const void *sendbuf, void *recvbuf,
                                           size_t recvcount, dt_dtype_t dtype,
                                           dt_reduce_op_t op, dt_request_h *req)
{
    return dt_reduce_scatter_async_ex(ctx, name, sendbuf, recvbuf, recvcount, dtype, op,
                                      nullptr, req);
}

DT_API dt_status_t dt_reduce_scatter_ex(dt_context_h ctx, const char *name,
                                        const void *sendbuf, void *recvbuf,
                                        size_t recvcount, dt_dtype_t dtype,
                                        dt_reduce_op_t op, const dt_op_params_t *params)
{
    return blocking(dt_reduce_scatter_async_ex, ctx, name, sendbuf, recvbuf, recvcount,
                    dtype, op, params);
}

DT_API dt_status_t dt_reduce_scatter(dt_context_h ctx, const char *name,
                                     const void *sendbuf, void *recvbuf, size_t recvcount,
                                     dt_dtype_t dtype, dt_reduce_op_t op)
{
    return dt_reduce_scatter_ex(ctx, name, sendbuf, recvbuf, recvcount, dtype, op, nullptr);
}

DT_API dt_status_t dt_alltoall_async_ex(dt_context_h ctx, const char *name,
                                        const void *sendbuf, void *recvbuf, size_t count,
                                        dt_dtype_t dtype, const dt_op_params_t *params,
                                        dt_request_h *req)
{
    const char *fn = entry_name("dt_alltoall", "dt_alltoall_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        size_t size = static_cast<size_t>(ctx->impl->size());
        size_t total = checked_bytes(fn, count, dtype, size);
        require_buffer(sendbuf, total, fn, "sendbuf");
        require_buffer(recvbuf, total, fn, "recvbuf");
        refuse_overlap(fn, overlap(sendbuf, total, recvbuf, total),
                       "alltoall needs separate buffers");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        return submit(ctx, fn,
                      describe(OpKind::alltoall, name, sendbuf, recvbuf, count, dtype, memory),
                      req);
    });
}

DT_API dt_status_t dt_alltoall_async(dt_context_h ctx, const char *name, const void *sendbuf,
                                     void *recvbuf, size_t count, dt_dtype_t dtype,
                                     dt_request_h *req)
{
    return dt_alltoall_async_ex(ctx, name, sendbuf, recvbuf, count, dtype, nullptr, req);
}

DT_API dt_status_t dt_alltoall_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                  void *recvbuf, size_t count, dt_dtype_t dtype,
                                  const dt_op_params_t *params)
{
    return blocking(dt_alltoall_async_ex, ctx, name, sendbuf, recvbuf, count, dtype, params);
}

DT_API dt_status_t dt_alltoall(dt_context_h ctx, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, dt_dtype_t dtype)
{
    return dt_alltoall_ex(ctx, name, sendbuf, recvbuf, count, dtype, nullptr);
}

DT_API dt_status_t dt_allgatherv_async_ex(dt_context_h ctx, const char *name,
                                          const void *sendbuf, void *recvbuf,
                                          size_t sendcount, const size_t *recvcounts,
                                          dt_dtype_t dtype, const dt_op_params_t *params,
                                          dt_request_h *req)
{
    const char *fn = entry_name("dt_allgatherv", "dt_allgatherv_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        const size_t size = static_cast<size_t>(ctx->impl->size());
        const size_t rank = static_cast<size_t>(ctx->impl->rank());
        const size_t esize = dt_dtype_size(dtype);
        const size_t block = checked_bytes(fn, sendcount, dtype, 1);
        const size_t received = checked_sum(fn, "recvcounts", recvcounts, size, dtype);
        const size_t total = received * esize;
        if (recvcounts[rank] != sendcount)
            throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": recvcounts[", rank, "] = ",
                        recvcounts[rank], " but this rank (", rank, ") sends sendcount = ",
                        sendcount, "; recvcounts[r] must be rank r's sendcount");
        require_buffer(sendbuf, block, fn, "sendbuf");
        require_buffer(recvbuf, total, fn, "recvbuf");
        size_t before = 0;
        for (size_t r = 0; r < rank; ++r)
            before += recvcounts[r];
        const void *in_place = static_cast<char *>(recvbuf) + before * esize;
        refuse_overlap(fn, sendbuf != in_place && overlap(sendbuf, block, recvbuf, total),
                       "for an in-place allgatherv pass sendbuf = recvbuf + (recvcounts[0] "
                       "+ ... + recvcounts[rank-1]) elements");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        OpDesc desc = describe(OpKind::allgatherv, name, sendbuf, recvbuf, received, dtype,
                               memory);
        desc.counts.assign(recvcounts, recvcounts + size);
        return submit(ctx, fn, std::move(desc), req);
    });
}

DT_API dt_status_t dt_allgatherv_async(dt_context_h ctx, const char *name,
                                       const void *sendbuf, void *recvbuf, size_t sendcount,
                                       const size_t *recvcounts, dt_dtype_t dtype,
                                       dt_request_h *req)
{
    return dt_allgatherv_async_ex(ctx, name, sendbuf, recvbuf, sendcount, recvcounts, dtype,
                                  nullptr, req);
}

DT_API dt_status_t dt_allgatherv_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                    void *recvbuf, size_t sendcount,
                                    const size_t *recvcounts, dt_dtype_t dtype,
                                    const dt_op_params_t *params)
{
    return blocking(dt_allgatherv_async_ex, ctx, name, sendbuf, recvbuf, sendcount,
                    recvcounts, dtype, params);
}

DT_API dt_status_t dt_allgatherv(dt_context_h ctx, const char *name, const void *sendbuf,
                                 void *recvbuf, size_t sendcount, const size_t *recvcounts,
                                 dt_dtype_t dtype)
{
    return dt_allgatherv_ex(ctx, name, sendbuf, recvbuf, sendcount, recvcounts, dtype,
                            nullptr);
}

DT_API dt_status_t dt_alltoallv_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf,
                                         const size_t *sendcounts, const size_t *recvcounts,
                                         dt_dtype_t dtype, const dt_op_params_t *params,
                                         dt_request_h *req)
{
    const char *fn = entry_name("dt_alltoallv", "dt_alltoallv_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        check_dtype(fn, dtype);
        const size_t size = static_cast<size_t>(ctx->impl->size());
        const size_t esize = dt_dtype_size(dtype);
        const size_t sent = checked_sum(fn, "sendcounts", sendcounts, size, dtype);
        const size_t received = checked_sum(fn, "recvcounts", recvcounts, size, dtype);
        require_buffer(sendbuf, sent * esize, fn, "sendbuf");
        require_buffer(recvbuf, received * esize, fn, "recvbuf");
        refuse_overlap(fn, overlap(sendbuf, sent * esize, recvbuf, received * esize),
                       "alltoallv needs separate buffers");
        auto memory = memory_of(ctx, fn, name, params, sendbuf, recvbuf);
        OpDesc desc = describe(OpKind::alltoallv, name, sendbuf, recvbuf, received, dtype,
                               memory);
        desc.counts.reserve(2 * size);
        desc.counts.assign(sendcounts, sendcounts + size);
        desc.counts.insert(desc.counts.end(), recvcounts, recvcounts + size);
        return submit(ctx, fn, std::move(desc), req);
    });
}

DT_API dt_status_t dt_alltoallv_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf,
                                      const size_t *sendcounts, const size_t *recvcounts,
                                      dt_dtype_t dtype, dt_request_h *req)
{
    return dt_alltoallv_async_ex(ctx, name, sendbuf, recvbuf, sendcounts, recvcounts, dtype,
                                 nullptr, req);
}

DT_API dt_status_t dt_alltoallv_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, const size_t *sendcounts,
                                   const size_t *recvcounts, dt_dtype_t dtype,
                                   const dt_op_params_t *params)
{
    return blocking(dt_alltoallv_async_ex, ctx, name, sendbuf, recvbuf, sendcounts,
                    recvcounts, dtype, params);
}

DT_API dt_status_t dt_alltoallv(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, const size_t *sendcounts,
                                const size_t *recvcounts, dt_dtype_t dtype)
{
    return dt_alltoallv_ex(ctx, name, sendbuf, recvbuf, sendcounts, recvcounts, dtype,
                           nullptr);
}

DT_API dt_status_t dt_barrier_async_ex(dt_context_h ctx, const char *name,
                                       const dt_op_params_t *params, dt_request_h *req)
{
    const char *fn = entry_name("dt_barrier", "dt_barrier_async");
    return guard([&] {
        dt::capi::require_context(ctx, fn);
        // A barrier moves no buffer: its params are checked, and mean nothing yet.
        dt::check_op_params(fn, name, params);
        return submit(ctx, fn,
                      describe(OpKind::barrier, name, nullptr, nullptr, 0, DT_UINT8, {}),
                      req);
    });
}

DT_API dt_status_t dt_barrier_async(dt_context_h ctx, const char *name, dt_request_h *req)
{
    return dt_barrier_async_ex(ctx, name, nullptr, req);
}

DT_API dt_status_t dt_barrier_ex(dt_context_h ctx, const char *name,
                                 const dt_op_params_t *params)
{
    return blocking(dt_barrier_async_ex, ctx, name, params);
}

DT_API dt_status_t dt_barrier(dt_context_h ctx, const char *name)
{
    return dt_barrier_ex(ctx, name, nullptr);
}

} // extern "C"

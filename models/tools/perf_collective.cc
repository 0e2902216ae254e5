// SPDX-License-Identifier: Apache-2.0
#include "perf_collective.h"

#include "perf_data.h"

namespace dt::perf {

namespace {

// Never produced by the patterns (|values| <= 11) nor by their reductions here.
constexpr double kUnwritten = 99.0;

uint64_t seed_of(int rank) { return static_cast<uint64_t>(rank); }

void fill(dt_dtype_t dtype, void *buf, size_t count, double value)
{
    for (size_t i = 0; i < count; ++i)
        store_element(dtype, buf, i, value);
}

// Pattern that a copy collective moves (the op does not matter for copies).
double copy_value(dt_dtype_t dtype, int ranks, uint64_t seed, size_t index)
{
    return pattern_value(dtype, DT_SUM, ranks, seed, index);
}

} // namespace

Shape shape_for(Collective collective, size_t bytes, size_t element_size, int ranks)
{
    const size_t n = static_cast<size_t>(ranks);
    const size_t elements = bytes / element_size;
    const size_t blocks = elements / n; // per-rank block of the split collectives
    Shape s;
    switch (collective) {
    case Collective::allreduce:
        s = {elements, elements, elements, elements * element_size};
        break;
    case Collective::broadcast:
        s = {0, elements, elements, elements * element_size};
        break;
    case Collective::allgather:
        s = {blocks, blocks * n, blocks, blocks * n * element_size};
        break;
    case Collective::reduce_scatter:
        s = {blocks * n, blocks, blocks, blocks * n * element_size};
        break;
    case Collective::alltoall:
        s = {blocks * n, blocks * n, blocks, blocks * n * element_size};
        break;
    case Collective::barrier:
        break;
    }
    return s;
}

double busbw_factor(Collective collective, int ranks)
{
    const double n = ranks;
    switch (collective) {
    case Collective::allreduce: return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reduce_scatter:
    case Collective::alltoall: return (n - 1) / n;
    case Collective::broadcast: return 1.0;
    case Collective::barrier: return 0.0;
    }
    return 0.0;
}

const void *inplace_send(Collective collective, void *recv, const Shape &shape,
                         size_t element_size, int rank)
{
    if (collective == Collective::allgather)
        return static_cast<char *>(recv) + static_cast<size_t>(rank) * shape.count *
                                               element_size;
    return recv;
}

dt_status_t launch(const Call &c, dt_request_h *req)
{
    const size_t n = c.shape.count;
    switch (c.collective) {
    case Collective::allreduce:
        return req ? dt_allreduce_async(c.ctx, c.name, c.send, c.recv, n, c.dtype, c.op, req)
                   : dt_allreduce(c.ctx, c.name, c.send, c.recv, n, c.dtype, c.op);
    case Collective::broadcast:
        return req ? dt_broadcast_async(c.ctx, c.name, c.recv, n, c.dtype, c.root, req)
                   : dt_broadcast(c.ctx, c.name, c.recv, n, c.dtype, c.root);
    case Collective::allgather:
        return req ? dt_allgather_async(c.ctx, c.name, c.send, c.recv, n, c.dtype, req)
                   : dt_allgather(c.ctx, c.name, c.send, c.recv, n, c.dtype);
    case Collective::reduce_scatter:
        return req ? dt_reduce_scatter_async(c.ctx, c.name, c.send, c.recv, n, c.dtype,
                                             c.op, req)
                   : dt_reduce_scatter(c.ctx, c.name, c.send, c.recv, n, c.dtype, c.op);
    case Collective::alltoall:
        return req ? dt_alltoall_async(c.ctx, c.name, c.send, c.recv, n, c.dtype, req)
                   : dt_alltoall(c.ctx, c.name, c.send, c.recv, n, c.dtype);
    case Collective::barrier:
        return req ? dt_barrier_async(c.ctx, c.name, req) : dt_barrier(c.ctx, c.name);
    }
    return DT_ERR_INVALID_ARGUMENT;
}

void fill_for_check(const Call &c, bool inplace, int rank, int ranks)
{
    const Shape &s = c.shape;
    void *send = const_cast<void *>(c.send); // our own buffer, const only in the call
    switch (c.collective) {
    case Collective::allreduce:
        if (!inplace)
            fill(c.dtype, c.recv, s.recv_count, kUnwritten);
        for (size_t i = 0; i < s.count; ++i)
            store_element(c.dtype, send, i, pattern_value(c.dtype, c.op, ranks, seed_of(rank), i));
        break;
    case Collective::broadcast:
        for (size_t i = 0; i < s.count; ++i)
            store_element(c.dtype, c.recv, i,
                          rank == c.root ? copy_value(c.dtype, ranks, seed_of(rank), i)
                                         : kUnwritten);
        break;
    case Collective::allgather:
        fill(c.dtype, c.recv, s.recv_count, kUnwritten);
        for (size_t i = 0; i < s.count; ++i)
            store_element(c.dtype, send, i, copy_value(c.dtype, ranks, seed_of(rank), i));
        break;
    case Collective::reduce_scatter:
        fill(c.dtype, c.recv, s.recv_count, kUnwritten);
        for (size_t i = 0; i < s.send_count; ++i)
            store_element(c.dtype, send, i, pattern_value(c.dtype, c.op, ranks, seed_of(rank), i));
        break;
    case Collective::alltoall:
        fill(c.dtype, c.recv, s.recv_count, kUnwritten);
        for (int peer = 0; peer < ranks; ++peer)
            for (size_t i = 0; i < s.count; ++i)
                store_element(c.dtype, send, static_cast<size_t>(peer) * s.count + i,
                              copy_value(c.dtype, ranks,
                                         seed_of(rank) * static_cast<uint64_t>(ranks) +
                                             static_cast<uint64_t>(peer), i));
        break;
    case Collective::barrier:
        break;
    }
}

uint64_t count_wrong(const Call &c, int rank, int ranks)
{
    const Shape &s = c.shape;
    uint64_t wrong = 0;
    auto expect = [&](size_t index, double expected) {
        const double got = load_element(c.dtype, c.recv, index);
        if (!element_matches(c.dtype, c.op, got, expected))
            ++wrong;
    };
    switch (c.collective) {
    case Collective::allreduce:
        for (size_t i = 0; i < s.count; ++i)
            expect(i, expected_reduction(c.dtype, c.op, ranks, i));
        break;
    case Collective::broadcast:
        for (size_t i = 0; i < s.count; ++i)
            expect(i, copy_value(c.dtype, ranks, seed_of(c.root), i));
        break;
    case Collective::allgather:
        for (int r = 0; r < ranks; ++r)
            for (size_t i = 0; i < s.count; ++i)
                expect(static_cast<size_t>(r) * s.count + i,
                       copy_value(c.dtype, ranks, seed_of(r), i));
        break;
    case Collective::reduce_scatter:
        for (size_t i = 0; i < s.count; ++i)
            expect(i, expected_reduction(c.dtype, c.op, ranks,
                                         static_cast<size_t>(rank) * s.count + i));
        break;
    case Collective::alltoall:
        for (int sender = 0; sender < ranks; ++sender)
            for (size_t i = 0; i < s.count; ++i)
                expect(static_cast<size_t>(sender) * s.count + i,
                       copy_value(c.dtype, ranks,
                                  seed_of(sender) * static_cast<uint64_t>(ranks) +
                                      static_cast<uint64_t>(rank), i));
        break;
    case Collective::barrier:
        break;
    }
    return wrong;
}

} // namespace dt::perf

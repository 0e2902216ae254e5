// SPDX-License-Identifier: Apache-2.0
// Staging: a device-memory call on paths that read host memory only (shared memory, the
// core's point-to-point algorithms, a host-only transport's native collectives). The
// buffers are copied to pinned host memory once the producer's work up to the call has
// run, the call runs there as a host call through the router's host paths, and the
// result is copied back (staging.h); the call completes once that copy has finished.
//
// One host collective per call, never a chunked series: a rank that joined runs the same
// call on host memory it makes up, and every rank must run the same sequence of
// collectives. Copies of successive calls overlap the collectives through fusion
// (runtime/engine_execute.cc), which stages a whole batch with one wait each way.
#include "routing/paths.h"
#include "routing/router.h"
#include "routing/staging.h"
#include "runtime/error.h"

namespace dt::routing {

namespace {

bool staging_applies(const Call &call, const Topology &t, const Policy &)
{
    return call.memory == Memory::device && t.staging;
}

struct Extent {
    size_t send = 0; // bytes of sendbuf the call reads
    size_t recv = 0; // bytes of recvbuf it writes
};

Extent extent_of(const Args &a, int rank, int size)
{
    const size_t n = a.count * dt_dtype_size(a.dtype);
    const size_t all = n * static_cast<size_t>(size);
    switch (a.kind) {
    case OpKind::allreduce:
    case OpKind::broadcast: return {n, n};
    case OpKind::allgather: return {n, all};
    case OpKind::reduce_scatter: return {all, n};
    case OpKind::alltoall: return {all, all};
    case OpKind::allgatherv: {
        // The C API checked these sums for overflow.
        const size_t esize = dt_dtype_size(a.dtype);
        size_t total = 0;
        for (int r = 0; r < size; ++r)
            total += a.counts[r];
        return {a.counts[rank] * esize, total * esize};
    }
    case OpKind::alltoallv: {
        const size_t esize = dt_dtype_size(a.dtype);
        size_t send = 0, recv = 0;
        for (int r = 0; r < size; ++r) {
            send += a.counts[r];
            recv += a.counts[size + r];
        }
        return {send * esize, recv * esize};
    }
    case OpKind::barrier:
    case OpKind::join: break;
    }
    return {};
}

bool run_staged(const Services &s, algo::Comm &comm, const Args &a)
{
    Staging &st = *s.staging;
    const Extent e = extent_of(a, comm.rank(), comm.size());
    const bool in_place = a.sendbuf == a.recvbuf;
    // Broadcast: only the root's buffer is read, and the root's is not written.
    const bool reads = a.kind != OpKind::broadcast || comm.rank() == a.root;
    const bool writes = a.kind != OpKind::broadcast || comm.rank() != a.root;
    Args host = a;
    try {
        void *recv = e.recv > 0 ? st.buffer(1, e.recv) : nullptr;
        void *send = in_place ? recv : (e.send > 0 ? st.buffer(0, e.send) : nullptr);
        host.sendbuf = send;
        host.recvbuf = recv;
        if (reads && e.send > 0) {
            void *in = st.after(a.stream, a.ready);
            st.to_host(send, a.sendbuf, e.send, in);
            st.wait(in, comm, a.name);
        }
    } catch (const Error &err) {
        comm.fail_collective(err.status(), err.what()); // the peers must not wait for us
    }
    s.router->run_host(comm, host);
    try {
        if (writes && e.recv > 0) {
            void *back = st.return_stream(a.stream);
            st.to_device(a.recvbuf, host.recvbuf, e.recv, back);
            st.wait(back, comm, a.name);
        }
    } catch (const Error &err) {
        comm.fail_collective(err.status(), err.what());
    }
    return true;
}

} // namespace

const Path kStaging{"staging", memory_bit(Memory::device), Carrier::none, true,
                    staging_applies, run_staged};

} // namespace dt::routing

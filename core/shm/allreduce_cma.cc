// SPDX-License-Identifier: Apache-2.0
// Single-copy allreduce: reduce-scatter + allgather that reads the peers' own buffers
// with process_vm_readv (cma.h) instead of staging them through the segments.
//
// The message is cut in n contiguous slices, one per member; slice j is cut in pieces.
// Rank r, for each piece k of its slice r:
//   - reads piece k of slice r of each peer's sendbuf into a scratch piece (one kernel
//     copy; the inputs need no handoff: a sendbuf is ready when its owner publishes),
//   - reduces them with its own input into its recvbuf, in member order,
//   - posts `reduced` = k + 1;
// and whenever a peer m has posted more reduced pieces, reads them from m's recvbuf
// straight into its own (one kernel copy, every ready piece in one call: slices are
// contiguous). The staging path moves each byte about four times (stage, reduce, copy the
// result to the segment and out, copy out of the peer's segment); this one twice, but
// each through the kernel, which copies slower than memcpy: where it pays is measured
// in tuning.cc (off by default there).
//
// Lifetimes. Peers read this rank's sendbuf (slices j != r, owner j) and its recvbuf
// (slice r) until they are done, so a rank leaves only once every member has posted
// `done` (all its reads finished). Each posts `done` right after its last read, which
// waits only for `reduced` counters, never for a `done`: the final waits cannot cycle.
// In place (sendbuf == recvbuf), the writes into recvbuf overwrite inputs:
//   - slice r, piece k is overwritten by its own reduction, and only this rank reads
//     its input of slice r (the reduction below reads every input before it writes);
//   - slice j != r, piece k is overwritten when this rank copies out owner j's reduced
//     piece k, which j posted only after reading this rank's input of that piece.
// Nothing here ever writes into another process: process_vm_readv writes only locally.
#include "reduce/reduce.h"
#include "runtime/error.h"
#include "shm/cma.h"
#include "shm/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dt::shm::detail {

namespace {

uint64_t address(const void *p) { return reinterpret_cast<uint64_t>(p); }

// A failed read after the attach-time probe succeeded is the call's error, never a
// silent wrong result: a peer that is gone (ESRCH, or any error once its pidfd says it
// exited) is a lost peer; anything else a failed transfer.
[[noreturn]] void fail_read(Team &team, int m, int err, uint64_t remote, size_t bytes)
{
    const int me = team.world_rank(team.rank());
    const int peer = team.world_rank(m);
    if (err == ESRCH || !team.alive(m))
        team.fail(DT_ERR_PEER_LOST,
                  cat(team.what(), ": rank ", peer, " (pid ", team.pid(m), ") exited while "
                      "rank ", me, " read its buffers (process_vm_readv: ",
                      cma::describe(err), "); its log or the launcher tells why"));
    team.fail(DT_ERR_TRANSPORT,
              cat(team.what(), ": rank ", me, " could not read ", bytes, " bytes at 0x",
                  std::hex, remote, std::dec, " of rank ", peer, " (pid ", team.pid(m),
                  ") with process_vm_readv: ", cma::describe(err), "; the start-up probe "
                  "could read that process, so its buffer for this call is not readable "
                  "(freed or smaller than the call says?); DISTTRAIN_SHM_CMA=0 turns "
                  "single-copy reads off"));
}

} // namespace

CallBuffers call_buffers(const void *sendbuf, void *recvbuf, size_t bytes, dt_dtype_t dtype,
                         dt_reduce_op_t op, uint32_t path)
{
    return {address(sendbuf), address(recvbuf), bytes, static_cast<uint32_t>(dtype),
            static_cast<uint32_t>(op), path};
}

void read_call_buffers(Team &team, const CallBuffers &mine, CallBuffers *peer)
{
    const int r = team.rank();
    for (int m = 0; m < team.size(); ++m) {
        if (m == r)
            continue;
        std::memcpy(&peer[m], team.wait_published(m).payload, sizeof peer[m]);
        if (peer[m].bytes != mine.bytes || peer[m].dtype != mine.dtype || peer[m].op != mine.op)
            team.fail(DT_ERR_MISMATCH,
                      cat(team.what(), ": rank ", team.world_rank(m), " passed ",
                          peer[m].bytes, " bytes (dtype ", peer[m].dtype, ", op ",
                          peer[m].op, ") but rank ", team.world_rank(r), " ", mine.bytes,
                          " bytes (dtype ", mine.dtype, ", op ", mine.op, "); every rank "
                          "must pass the same count, dtype and op"));
    }
}

void allreduce_single_copy(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                           dt_dtype_t dtype, dt_reduce_op_t op, size_t piece_bytes,
                           const CallBuffers *peer)
{
    const int n = team.size();
    const int r = team.rank();
    const size_t esize = dt_dtype_size(dtype);
    const size_t bytes = count * esize;
    // Slices and pieces on 64-byte boundaries (a multiple of every element size); the
    // last slices may be short or empty. Every member derives the same geometry.
    const size_t slice = align_up((bytes + n - 1) / static_cast<size_t>(n));
    const size_t piece = std::min(slice, align_down(piece_bytes));
    const uint64_t pieces = (slice + piece - 1) / piece;
    // Byte offset where piece k of slice j starts (k == pieces: where the slice ends).
    auto at = [&](int j, uint64_t k) {
        return std::min(bytes, j * slice + std::min<size_t>(slice, k * piece));
    };
    const auto *send = static_cast<const std::byte *>(sendbuf);
    auto *recv = static_cast<std::byte *>(recvbuf);
    team.domain().count_cma_call();

    auto read = [&](int m, void *dst, uint64_t src, size_t len) {
        if (int err = cma::read(team.pid(m), dst, src, len); err != 0)
            fail_read(team, m, err, src, len);
    };

    // Two scratch pieces: the running partial result and the input being read. The
    // fold runs in member order, in[0] op in[1] op ... (the order of every other path,
    // so results are bit-identical), reading peer m's input just before it is needed.
    std::byte *const acc = team.domain().cma_scratch(2 * piece);
    if (acc == nullptr)
        team.fail(DT_ERR_NO_MEMORY, cat(team.what(), ": no ", 2 * piece, " bytes of scratch "
                                        "for single-copy reads"));
    std::byte *const in = acc + piece;
    uint64_t copied[kMaxMembers] = {}; // pieces of member m's slice in our recvbuf
    auto copy_out = [&](int m, uint64_t upto) {
        const size_t from = at(m, copied[m]), to = at(m, upto);
        if (to > from)
            read(m, recv + from, peer[m].recv + from, to - from);
        copied[m] = upto;
    };
    for (uint64_t k = 0; k < pieces; ++k) {
        const size_t off = at(r, k);
        const size_t len = at(r, k + 1) - off;
        if (len > 0) {
            const std::byte *partial;
            if (r == 0) {
                partial = send + off;
            } else {
                read(0, acc, peer[0].send + off, len);
                partial = acc;
            }
            for (int m = 1; m < n; ++m) {
                const std::byte *src = send + off;
                if (m != r) {
                    read(m, in, peer[m].send + off, len);
                    src = in;
                }
                // The last step writes the result. In place, recv + off is our own
                // input: this step's second operand (r == n - 1) or its first (r == 0,
                // n == 2), which reduce allows (it reads both operands of an element
                // before writing it), or else one folded into acc in an earlier step.
                std::byte *dst = m == n - 1 ? recv + off : acc;
                reduce::reduce(dst, partial, src, len / esize, dtype, op);
                partial = dst;
            }
        }
        team.post(&Control::reduced, k + 1);
        // Copy out whatever the peers have reduced by now, without waiting.
        for (int i = 1; i < n; ++i) {
            const int m = (r + i) % n; // start at different peers: spread the readers
            const uint64_t ready = team.counter(m, &Control::reduced);
            if (ready > copied[m])
                copy_out(m, ready);
        }
    }
    for (int i = 1; i < n; ++i) {
        const int m = (r + i) % n;
        while (copied[m] < pieces) {
            team.wait_counter(m, &Control::reduced, copied[m] + 1);
            copy_out(m, team.counter(m, &Control::reduced));
        }
    }
    // Every read landed in the process that published the buffers: a pid is reused only
    // after its process died, and each peer is still alive now (its pidfd), after our
    // last read, and before our `done` lets it leave. (Without pidfds, kill(pid, 0)
    // cannot tell, but then a pid would have to wrap around within one call.)
    for (int m = 0; m < n; ++m)
        if (m != r && !team.alive(m))
            team.fail(DT_ERR_PEER_LOST,
                      cat(team.what(), ": rank ", team.world_rank(m), " (pid ", team.pid(m),
                          ") exited during the call, before rank ", team.world_rank(r),
                          " could confirm what it read from it; its log or the launcher "
                          "tells why"));
    team.post(&Control::done, pieces);
    wait_all(team, &Control::done, pieces);
}

} // namespace dt::shm::detail

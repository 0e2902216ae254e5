// SPDX-License-Identifier: Apache-2.0
// Shared-memory allreduce, three ways by size:
//  - inline: the input rides in the tag's cache line; each rank reduces all of them;
//  - one-shot: each rank stages its input (in the half of its data area that goes with
//    the call's tag line, team.h), then reduces every staged input itself
//    (one handoff; wins while reading n inputs costs less than a second handoff);
//  - single-copy (allreduce_cma.cc), where the kernel lets the ranks read each other's
//    memory: reduce-scatter + allgather reading the peers' own buffers; from a fixed
//    size (DISTTRAIN_SHM_CMA_BYTES), or by default chosen against the pipelined path by
//    the times the first member measured of both (path_choice.h);
//  - pipelined reduce-scatter + allgather: the message is cut in pieces of n slices;
//    rank r stages the slices the others reduce, reduces slice r of every piece from
//    the peers' staging slots, publishes it, and copies the peers' reduced slices out.
//    Pieces cycle through the slots, so staging, reducing and copying out overlap
//    across ranks and stay in cache; or, through memory, what the peers read is written
//    with non-temporal stores (README.md, Staging through memory).
#include "reduce/reduce.h"
#include "shm/collectives.h"
#include "shm/path_choice.h"
#include "shm/pipeline.h"
#include "shm/stream_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace dt::shm {

namespace {

using detail::Slots;

// dst = in[0] op in[1] op ... in member order; in[] may alias nothing in dst except
// through the first input (reduce writes dst after reading both of its inputs).
void reduce_all(void *dst, const void *const *in, int n, size_t count, dt_dtype_t dtype,
                dt_reduce_op_t op)
{
    reduce::reduce(dst, in[0], in[1], count, dtype, op);
    for (int m = 2; m < n; ++m)
        reduce::reduce_into(dst, in[m], count, dtype, op);
}

constexpr int kMaxInputs = detail::kMaxMembers;

void plain_copy(void *dst, const void *src, size_t bytes) { std::memcpy(dst, src, bytes); }

void allreduce_inline(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                      dt_dtype_t dtype, dt_reduce_op_t op, size_t bytes)
{
    team.publish_inline(sendbuf, bytes);
    const void *in[kMaxInputs];
    for (int m = 0; m < team.size(); ++m)
        in[m] = team.wait_published(m).payload;
    reduce_all(recvbuf, in, team.size(), count, dtype, op);
}

void allreduce_oneshot(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                       dt_dtype_t dtype, dt_reduce_op_t op, size_t bytes)
{
    std::memcpy(team.my_region(), sendbuf, bytes);
    team.publish();
    const void *in[kMaxInputs];
    for (int m = 0; m < team.size(); ++m)
        in[m] = m == team.rank() ? team.my_region()
                                 : team.region(m, team.wait_published(m));
    reduce_all(recvbuf, in, team.size(), count, dtype, op);
}

// How the pipelined path hands its pieces to the peers.
enum class Handoff { kBySize, kThroughCache, kThroughMemory };

// published: the caller has published this rank's tag line already. handoff: kBySize
// goes through memory from tune.stream_bytes up, where every rank has its own CPU.
void allreduce_pipelined(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                         dt_dtype_t dtype, dt_reduce_op_t op, const Tuning &tune,
                         int avg_divisor, bool published = false,
                         Handoff handoff = Handoff::kBySize)
{
    const int n = team.size();
    const int r = team.rank();
    const size_t esize = dt_dtype_size(dtype);
    const Slots slots(team, tune.slots);
    // Slot: n input slices, then this rank's reduced slice.
    const size_t fit = detail::align_down(slots.slot_bytes / static_cast<size_t>(n + 1));
    const size_t even = detail::align_up((count * esize + n - 1) / n);
    const size_t slice = std::min({tune.slice_bytes, fit, even}); // bytes
    const size_t se = slice / esize;                               // elements
    const uint64_t pieces = (count + se * n - 1) / (se * n);
    const auto *send = static_cast<const std::byte *>(sendbuf);
    auto *recv = static_cast<std::byte *>(recvbuf);
    // Elements of slice j of piece k.
    auto first = [&](uint64_t k, int j) { return std::min(count, (k * n + j) * se); };
    auto length = [&](uint64_t k, int j) { return std::min(count, first(k, j) + se) - first(k, j); };
    // Through memory: what the peers read (staged inputs, this rank's reduced slice) is
    // written with non-temporal stores, so a peer reads it from memory (prefetched,
    // ~100 ns a line) instead of taking each line out of this core's cache, which costs
    // ~300 ns when the two cores share no L3 (README.md, Measured).
    // Not where ranks take turns on a core: the reader then often runs on the writer's
    // core, with the data in its own cache (4 ranks on 2 CPUs: 10-30% slower through
    // memory).
    const bool via_memory =
        handoff == Handoff::kBySize
            ? count * esize >= tune.stream_bytes && (!team.oversubscribed() || tune.stream_forced)
            : handoff == Handoff::kThroughMemory;
    void (*const stage)(void *, const void *, size_t) = via_memory ? stream_copy : plain_copy;
    // Reducing straight into recvbuf would overwrite an input still to be read when
    // this rank's own input (in place) is not one of the first two.
    const bool reduce_into_recv = via_memory && !(sendbuf == recvbuf && r >= 2);

    if (!published)
        team.publish();
    detail::wait_all_published(team);
    const void *in[kMaxInputs];
    for (uint64_t k = 0; k < pieces; ++k) {
        std::byte *mine = slots.mine(team, k);
        // Stage the slices the peers reduce, once they have left this slot's last piece.
        if (k >= static_cast<uint64_t>(slots.count))
            detail::wait_all(team, &Control::reduced, k - slots.count + 1);
        for (int j = 0; j < n; ++j)
            if (j != r && length(k, j) > 0)
                stage(mine + j * slice, send + first(k, j) * esize, length(k, j) * esize);
        if (via_memory) // non-temporal stores are not ordered by the post's release
            stream_fence();
        team.post(&Control::posted, k + 1);

        // Reduce slice r into the slot's result area (or into recvbuf, then streamed to
        // the result area), once the peers have copied out the result this slot held.
        const size_t len = length(k, r);
        std::byte *result = mine + n * slice;
        if (k >= static_cast<uint64_t>(slots.count))
            detail::wait_all(team, &Control::done, k - slots.count + 1);
        for (int m = 0; m < n; ++m) {
            if (m == r) {
                in[m] = send + first(k, r) * esize;
            } else {
                team.wait_counter(m, &Control::posted, k + 1);
                in[m] = slots.of(team, m, k) + r * slice;
            }
        }
        if (len > 0) {
            std::byte *own = recv + first(k, r) * esize;
            std::byte *dst = reduce_into_recv ? own : result;
            reduce_all(dst, in, n, len, dtype, op);
            if (avg_divisor > 0) // while the slice is in cache; the peers copy it divided
                reduce::finish_average(dst, len, dtype, avg_divisor);
            if (reduce_into_recv) {
                stream_copy(result, own, len * esize);
                stream_fence();
            } else {
                std::memcpy(own, result, len * esize);
            }
        }
        team.post(&Control::reduced, k + 1);

        // Copy the peers' reduced slices out.
        for (int m = 0; m < n; ++m) {
            if (m == r)
                continue;
            team.wait_counter(m, &Control::reduced, k + 1);
            if (length(k, m) > 0)
                std::memcpy(recv + first(k, m) * esize, slots.of(team, m, k) + n * slice,
                            length(k, m) * esize);
        }
        team.post(&Control::done, k + 1);
    }
}

// The path the first member chose from the times of the earlier calls (path_choice.h):
// it publishes the choice with its buffers, every member reads it there, and the first
// member times the path from every member's arrival to its own end. Returns whether it
// was single copy (the pipelined path divides by avg_divisor itself).
bool allreduce_chosen(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                      dt_dtype_t dtype, dt_reduce_op_t op, const Tuning &tune,
                      int avg_divisor, size_t piece)
{
    const bool first = team.rank() == 0;
    const size_t bytes = count * dt_dtype_size(dtype);
    PathChooser &chooser = team.domain().path_chooser();
    const int forced = team.domain().cma_options().force_path;
    // Staging through memory is a path of its own where the size would take it by
    // default (tuning.cc); a fixed DISTTRAIN_SHM_STREAM_BYTES leaves it to the size.
    const int offered = !tune.stream_forced && !team.oversubscribed() &&
                                bytes >= tune.stream_bytes
                            ? 3
                            : 2;
    team.begin(true);
    uint32_t choice = 0;
    if (first) {
        const auto path = forced >= 0 ? static_cast<PathChooser::Path>(forced)
                                      : chooser.choose(bytes, Clock::now(), offered);
        choice = path == PathChooser::kSingleCopy            ? kPathSingleCopy
                 : path == PathChooser::kStagingThroughMemory ? kPathThroughMemory
                                                              : 0;
    }
    const CallBuffers mine = detail::call_buffers(sendbuf, recvbuf, bytes, dtype, op, choice);
    team.publish_inline(&mine, sizeof mine);
    CallBuffers peer[kMaxInputs];
    detail::read_call_buffers(team, mine, peer);
    const uint32_t path = first ? choice : peer[0].path;
    const bool single_copy = (path & kPathSingleCopy) != 0;
    const bool through_memory = (path & kPathThroughMemory) != 0;
    const auto start = Clock::now(); // every member has arrived
    if (single_copy)
        detail::allreduce_single_copy(team, sendbuf, recvbuf, count, dtype, op, piece, peer);
    else
        allreduce_pipelined(team, sendbuf, recvbuf, count, dtype, op, tune, avg_divisor,
                            /*published=*/true,
                            through_memory ? Handoff::kThroughMemory
                            : offered == 3 ? Handoff::kThroughCache
                                           : Handoff::kBySize);
    if (first) {
        const auto now = Clock::now();
        chooser.record(bytes,
                       single_copy      ? PathChooser::kSingleCopy
                       : through_memory ? PathChooser::kStagingThroughMemory
                                        : PathChooser::kStaging,
                       now - start, now);
    }
    return single_copy;
}

} // namespace

void allreduce(Team &team, const void *sendbuf, void *recvbuf, size_t count,
               dt_dtype_t dtype, dt_reduce_op_t op, int avg_divisor)
{
    const size_t bytes = count * dt_dtype_size(dtype);
    if (team.size() == 1) {
        if (sendbuf != recvbuf && bytes > 0)
            std::memmove(recvbuf, sendbuf, bytes);
        if (avg_divisor > 0)
            reduce::finish_average(recvbuf, count, dtype, avg_divisor);
        return;
    }
    if (team.size() > kMaxInputs)
        team.fail(DT_ERR_UNSUPPORTED, "shared memory: more than 256 ranks on one host");
    if (count == 0)
        return;
    const Tuning tune = tuning(team.domain().tuning_overrides(), team.size());
    const CmaOptions &cma = team.domain().cma_options();
    const size_t cma_bytes = cma.min_bytes != 0 ? cma.min_bytes : tune.cma_bytes;
    const size_t piece = cma.piece_bytes != 0 ? cma.piece_bytes : tune.cma_piece;
    // Every member makes the same choice here: the size, the members' attach-time
    // verdicts and the host's CPU count are the same everywhere, and the thresholds come
    // from the same variables. Where measured times choose, the first member decides.
    bool divided = false; // the path divided by avg_divisor itself
    if (bytes <= kInlineBytes) {
        team.begin_confined();
        allreduce_inline(team, sendbuf, recvbuf, count, dtype, op, bytes);
    } else if (bytes >= cma_bytes && team.single_copy()) {
        team.begin(true);
        const CallBuffers mine = detail::call_buffers(sendbuf, recvbuf, bytes, dtype, op);
        team.publish_inline(&mine, sizeof mine);
        CallBuffers peer[kMaxInputs];
        detail::read_call_buffers(team, mine, peer);
        detail::allreduce_single_copy(team, sendbuf, recvbuf, count, dtype, op, piece, peer);
    } else if (bytes >= tune.choose_bytes && cma.min_bytes == 0 && team.single_copy()) {
        divided = !allreduce_chosen(team, sendbuf, recvbuf, count, dtype, op, tune,
                                    avg_divisor, piece);
    } else if (bytes <= std::min(tune.oneshot_bytes, team.region_bytes())) {
        team.begin_confined();
        allreduce_oneshot(team, sendbuf, recvbuf, count, dtype, op, bytes);
    } else {
        team.begin(true);
        allreduce_pipelined(team, sendbuf, recvbuf, count, dtype, op, tune, avg_divisor);
        divided = true;
    }
    team.end();
    // After end(): the single-copy path's peers have read this rank's result by then.
    if (avg_divisor > 0 && !divided)
        reduce::finish_average(recvbuf, count, dtype, avg_divisor);
}

} // namespace dt::shm

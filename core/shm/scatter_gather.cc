// SPDX-License-Identifier: Apache-2.0
// Shared-memory reduce-scatter and alltoall: both send slice j of every rank's input to
// rank j; reduce-scatter combines what arrives, alltoall places it. Pieces of each block
// cycle through the staging slots: rank r stages piece k of every block but its own,
// then takes piece k of block r from each peer's slot.
#include "reduce/reduce.h"
#include "shm/collectives.h"
#include "shm/pipeline.h"

#include <algorithm>
#include <cstring>

namespace dt::shm {

namespace {

using detail::Slots;

// What rank r does with the n staged pieces of block r (the member's own from sendbuf).
template <typename Consume>
void exchange_blocks(Team &team, const void *sendbuf, size_t block_bytes, size_t align,
                     Consume &&consume)
{
    const int n = team.size();
    const int r = team.rank();
    const Tuning tune = tuning(team.domain().tuning_overrides(), n);
    const Slots slots(team, tune.slots);
    const size_t fit = detail::align_down(slots.slot_bytes / static_cast<size_t>(n));
    size_t piece = std::min({tune.slice_bytes, fit, detail::align_up(block_bytes)});
    piece -= piece % align;
    const uint64_t pieces = (block_bytes + piece - 1) / piece;
    const auto *send = static_cast<const std::byte *>(sendbuf);

    team.begin();
    team.publish();
    detail::wait_all_published(team);
    for (uint64_t k = 0; k < pieces; ++k) {
        const size_t off = k * piece;
        const size_t len = std::min(piece, block_bytes - off);
        std::byte *mine = slots.mine(team, k);
        if (k >= static_cast<uint64_t>(slots.count))
            detail::wait_all(team, &Control::reduced, k - slots.count + 1);
        for (int j = 0; j < n; ++j)
            if (j != r)
                std::memcpy(mine + j * piece, send + j * block_bytes + off, len);
        team.post(&Control::posted, k + 1);
        for (int m = 0; m < n; ++m)
            if (m != r)
                team.wait_counter(m, &Control::posted, k + 1);
        consume(off, len, [&](int m) -> const std::byte * {
            return m == r ? send + r * block_bytes + off : slots.of(team, m, k) + r * piece;
        });
        team.post(&Control::reduced, k + 1);
    }
    team.end();
}

} // namespace

void reduce_scatter(Team &team, const void *sendbuf, void *recvbuf, size_t recvcount,
                    dt_dtype_t dtype, dt_reduce_op_t op)
{
    const size_t esize = dt_dtype_size(dtype);
    const size_t block = recvcount * esize;
    if (block == 0)
        return;
    if (team.size() == 1) {
        if (sendbuf != recvbuf)
            std::memmove(recvbuf, sendbuf, block);
        return;
    }
    auto *recv = static_cast<std::byte *>(recvbuf);
    exchange_blocks(team, sendbuf, block, esize, [&](size_t off, size_t len, auto input) {
        // Member order, as every other path: recv = in0 op in1 op ...
        size_t count = len / esize;
        reduce::reduce(recv + off, input(0), input(1), count, dtype, op);
        for (int m = 2; m < team.size(); ++m)
            reduce::reduce_into(recv + off, input(m), count, dtype, op);
    });
}

void alltoall(Team &team, const void *sendbuf, void *recvbuf, size_t block_bytes)
{
    if (block_bytes == 0)
        return;
    if (team.size() == 1) {
        if (sendbuf != recvbuf)
            std::memmove(recvbuf, sendbuf, block_bytes);
        return;
    }
    auto *recv = static_cast<std::byte *>(recvbuf);
    const int r = team.rank();
    exchange_blocks(team, sendbuf, block_bytes, 1, [&](size_t off, size_t len, auto input) {
        for (int m = 0; m < team.size(); ++m)
            if (m != r || recvbuf != sendbuf)
                std::memcpy(recv + m * block_bytes + off, input(m), len);
    });
}

} // namespace dt::shm

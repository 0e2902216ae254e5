// SPDX-License-Identifier: Apache-2.0
// Shared-memory allgather, broadcast and barrier. Allgather: every rank stages piece k of
// its block and copies piece k of every peer's; broadcast: the root stages, the others
// copy. A piece's slot is reused once every reader has said it copied it (reduced
// counter: "I have consumed your piece").
#include "shm/collectives.h"
#include "shm/pipeline.h"

#include <algorithm>
#include <cstring>

namespace dt::shm {

using detail::Slots;

void allgather(Team &team, const void *sendbuf, void *recvbuf, size_t block_bytes)
{
    const int n = team.size();
    const int r = team.rank();
    auto *recv = static_cast<std::byte *>(recvbuf);
    const auto *send = static_cast<const std::byte *>(sendbuf);
    if (block_bytes == 0)
        return;
    if (send != recv + r * block_bytes)
        std::memmove(recv + r * block_bytes, send, block_bytes);
    if (n == 1)
        return;
    const Tuning tune = tuning(team.domain().tuning_overrides(), n);
    const Slots slots(team, tune.slots);
    const size_t piece = std::min(slots.slot_bytes, std::max(tune.slice_bytes * n, size_t(64)));
    const uint64_t pieces = (block_bytes + piece - 1) / piece;
    team.begin();
    team.publish();
    detail::wait_all_published(team);
    for (uint64_t k = 0; k < pieces; ++k) {
        const size_t off = k * piece;
        const size_t len = std::min(piece, block_bytes - off);
        if (k >= static_cast<uint64_t>(slots.count))
            detail::wait_all(team, &Control::reduced, k - slots.count + 1);
        std::memcpy(slots.mine(team, k), recv + r * block_bytes + off, len);
        team.post(&Control::posted, k + 1);
        for (int i = 1; i < n; ++i) {
            int m = (r + i) % n; // start at different peers: spread the readers
            team.wait_counter(m, &Control::posted, k + 1);
            std::memcpy(recv + m * block_bytes + off, slots.of(team, m, k), len);
        }
        team.post(&Control::reduced, k + 1);
    }
    team.end();
}

void broadcast(Team &team, void *buf, size_t bytes, int root)
{
    const int n = team.size();
    if (n == 1 || bytes == 0)
        return;
    const Tuning tune = tuning(team.domain().tuning_overrides(), n);
    const Slots slots(team, tune.slots);
    const size_t piece = std::min(slots.slot_bytes, std::max(tune.slice_bytes * n, size_t(64)));
    const uint64_t pieces = (bytes + piece - 1) / piece;
    auto *data = static_cast<std::byte *>(buf);
    team.begin();
    team.publish();
    // Ordered mode: every member compares every member's call check before the data
    // moves. Otherwise the root reads nobody's line, and a member that reads only the
    // root's could finish before another finds a disagreement.
    if (team.checked())
        detail::wait_all_published(team);
    if (team.rank() == root) {
        for (uint64_t k = 0; k < pieces; ++k) {
            const size_t off = k * piece;
            if (k >= static_cast<uint64_t>(slots.count)) {
                // The peers' counters mean something once they publish this call.
                if (k == static_cast<uint64_t>(slots.count))
                    detail::wait_all_published(team);
                detail::wait_all(team, &Control::reduced, k - slots.count + 1);
            }
            std::memcpy(slots.mine(team, k), data + off, std::min(piece, bytes - off));
            team.post(&Control::posted, k + 1);
        }
    } else {
        team.wait_published(root);
        for (uint64_t k = 0; k < pieces; ++k) {
            const size_t off = k * piece;
            team.wait_counter(root, &Control::posted, k + 1);
            std::memcpy(data + off, slots.of(team, root, k), std::min(piece, bytes - off));
            team.post(&Control::reduced, k + 1);
        }
    }
    team.end();
}

void barrier(Team &team)
{
    if (team.size() == 1)
        return;
    team.begin(false);
    team.publish();
    detail::wait_all_published(team);
    team.end();
}

} // namespace dt::shm

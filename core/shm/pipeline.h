/* SPDX-License-Identifier: Apache-2.0 */
// Geometry shared by the pipelined collectives: the staging area split in slots, pieces
// cycling through them, and the wait that lets a slot be reused.
#pragma once

#include "shm/collectives.h"

#include <algorithm>

namespace dt::shm::detail {

// Members of one call at most (inputs of one reduction).
constexpr int kMaxMembers = 256;

struct Slots {
    size_t slot_bytes;
    int count;

    Slots(const Team &team, int slots)
        : slot_bytes((team.data_bytes() / static_cast<size_t>(slots)) & ~size_t(63)),
          count(slots)
    {
    }
    std::byte *mine(Team &team, uint64_t piece) const
    {
        return team.my_data() + (piece % count) * slot_bytes;
    }
    const std::byte *of(const Team &team, int member, uint64_t piece) const
    {
        return team.data(member) + (piece % count) * slot_bytes;
    }
};

// Waits until every peer's counter has reached value.
inline void wait_all(Team &team, Counter counter, uint64_t value)
{
    for (int m = 0; m < team.size(); ++m)
        if (m != team.rank())
            team.wait_counter(m, counter, value);
}

inline void wait_all_published(Team &team)
{
    for (int m = 0; m < team.size(); ++m)
        if (m != team.rank())
            team.wait_published(m);
}

// Largest multiple of 64 bytes (so of every element size) not above bytes, at least 64.
inline size_t align_down(size_t bytes) { return std::max<size_t>(64, bytes & ~size_t(63)); }
inline size_t align_up(size_t bytes) { return (bytes + 63) & ~size_t(63); }

// The call's buffers and arguments as a member publishes them in its tag line (the
// single-copy allreduce reads the peers' buffers at these addresses); path: the first
// member's choice for every member (path_choice.h), 0 elsewhere.
CallBuffers call_buffers(const void *sendbuf, void *recvbuf, size_t bytes, dt_dtype_t dtype,
                         dt_reduce_op_t op, uint32_t path = 0);
// Waits for every peer's published CallBuffers into peer[member] and checks its size,
// dtype and op against mine (DT_ERR_MISMATCH): reading a peer's memory with another
// rank's idea of its size would read past the peer's buffer.
void read_call_buffers(Team &team, const CallBuffers &mine, CallBuffers *peer);

// allreduce_cma.cc: every member reads the peers' buffers with process_vm_readv; only
// where team.single_copy(), after team.begin(true), once every member has published its
// CallBuffers and read the peers' (peer[member]).
void allreduce_single_copy(Team &team, const void *sendbuf, void *recvbuf, size_t count,
                           dt_dtype_t dtype, dt_reduce_op_t op, size_t piece_bytes,
                           const CallBuffers *peer);

} // namespace dt::shm::detail

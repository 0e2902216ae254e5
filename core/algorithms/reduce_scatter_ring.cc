// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter: a partial sum of block b travels around the ring, each rank adding
// its own contribution, and ends after p-1 hops at rank b. Step s sends the partial sum
// of block r-1-s and receives the one of block r-2-s; the last step's block is r itself,
// reduced straight into recvbuf. Two scratch blocks alternate so the receive of the next
// step is posted while this step's block is reduced and sent.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "reduce/reduce.h"

#include <cstring>
#include <vector>

namespace dt::algo {

void reduce_scatter_ring(Comm &comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                         dt_dtype_t dtype, dt_reduce_op_t op)
{
    const size_t es = detail::element_size(dtype, "reduce_scatter");
    const int p = comm.size(), r = comm.rank();
    const size_t block_bytes = recvcount * es;
    if (recvcount == 0)
        return;
    auto *in = static_cast<const std::byte *>(sendbuf);
    auto own = [&](int b) { return in + static_cast<size_t>(detail::wrap(b, p)) * block_bytes; };
    if (p == 1) {
        if (recvbuf != sendbuf)
            std::memcpy(recvbuf, sendbuf, block_bytes);
        return; // the average of one contribution is itself
    }
    const int left = detail::wrap(r - 1, p), right = detail::wrap(r + 1, p);

    std::vector<std::byte> scratch(2 * block_bytes);
    auto slot = [&](int s) { return scratch.data() + static_cast<size_t>(s % 2) * block_bytes; };
    Request first_send = comm.isend(right, own(r - 1), block_bytes);
    Request slot_send[2];
    Request recv = comm.irecv(left, slot(0), block_bytes);
    for (int s = 0; s <= p - 2; ++s) {
        Request next;
        if (s + 1 <= p - 2) {
            comm.wait(slot_send[(s + 1) % 2]); // the slot's last partial sum has left
            next = comm.irecv(left, slot(s + 1), block_bytes);
        }
        comm.wait(recv);
        const std::byte *contribution = own(r - 2 - s);
        if (s == p - 2) {
            reduce::reduce(recvbuf, slot(s), contribution, recvcount, dtype, op);
        } else {
            reduce::reduce(slot(s), slot(s), contribution, recvcount, dtype, op);
            slot_send[s % 2] = comm.isend(right, slot(s), block_bytes);
        }
        recv = std::move(next);
    }
    comm.wait(first_send);
    comm.wait(slot_send[0]);
    comm.wait(slot_send[1]);
    if (op == DT_AVG)
        reduce::finish_average(recvbuf, recvcount, dtype, p);
}

} // namespace dt::algo

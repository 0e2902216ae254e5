/* SPDX-License-Identifier: Apache-2.0 */
// Rotating buffers: each iteration uses the next of several buffer sets carved from one
// pool larger than the last-level cache, so that timings include memory traffic as a
// training step would see it, instead of flattering numbers from a cache-hot buffer.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace dt::perf {

class RotatingBuffers {
public:
    // Pools big enough for at least two sets of the largest sizes and for min_pool
    // bytes each; pages are touched now so that first-touch faults are not timed.
    RotatingBuffers(size_t max_send_bytes, size_t max_recv_bytes, size_t min_pool);

    // Lays out sets for this size; returns the number of sets.
    size_t configure(size_t send_bytes, size_t recv_bytes);
    size_t sets() const { return sets_; }

    void *send(size_t iteration) const { return send_pool_.get() + slot(iteration) * send_stride_; }
    void *recv(size_t iteration) const { return recv_pool_.get() + slot(iteration) * recv_stride_; }

private:
    struct Free {
        void operator()(char *p) const { std::free(p); }
    };
    using Pool = std::unique_ptr<char[], Free>;

    static Pool allocate(size_t bytes);
    size_t slot(size_t iteration) const { return iteration % sets_; }

    size_t send_pool_bytes_, recv_pool_bytes_;
    Pool send_pool_, recv_pool_;
    size_t send_stride_ = 0, recv_stride_ = 0, sets_ = 1;
};

} // namespace dt::perf

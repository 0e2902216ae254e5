// SPDX-License-Identifier: Apache-2.0
#include "perf_buffers.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <unistd.h>

namespace dt::perf {

namespace {

// Sets start on cache-line-and-vector friendly boundaries, as framework tensors do.
constexpr size_t kAlign = 4096;

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

} // namespace

RotatingBuffers::Pool RotatingBuffers::allocate(size_t bytes)
{
    bytes = round_up(std::max<size_t>(bytes, kAlign));
    Pool pool(static_cast<char *>(std::aligned_alloc(kAlign, bytes)));
    if (!pool)
        throw std::bad_alloc();
    // First touches now, not in the timed loop: this process's (memset), then the
    // kernel's (reading /dev/zero into the pool). On a paravirtualised host (PVM) the
    // kernel's first access to each page cost as much again: 1 MiB allreduces over TCP
    // took 2.9 ms for a first pass over 64 MiB of fresh pages, 0.35 ms after it. A
    // training step reuses its buffers, so it never pays that after the first step.
    std::memset(pool.get(), 0, bytes);
    if (int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC); zero >= 0) {
        for (size_t done = 0; done < bytes;) {
            const ssize_t n = ::read(zero, pool.get() + done, bytes - done);
            if (n <= 0)
                break; // only a warm-up: the pool is zeroed already
            done += static_cast<size_t>(n);
        }
        ::close(zero);
    }
    return pool;
}

RotatingBuffers::RotatingBuffers(size_t max_send_bytes, size_t max_recv_bytes,
                                 size_t min_pool)
    : send_pool_bytes_(max_send_bytes ? std::max(2 * round_up(max_send_bytes), min_pool) : 0),
      recv_pool_bytes_(std::max(2 * round_up(max_recv_bytes), min_pool)),
      send_pool_(allocate(send_pool_bytes_)),
      recv_pool_(allocate(recv_pool_bytes_))
{
}

size_t RotatingBuffers::configure(size_t send_bytes, size_t recv_bytes)
{
    send_stride_ = round_up(std::max<size_t>(send_bytes, 1));
    recv_stride_ = round_up(std::max<size_t>(recv_bytes, 1));
    const size_t send_sets = send_pool_bytes_ ? send_pool_bytes_ / send_stride_ : ~size_t{0};
    sets_ = std::max<size_t>(1, std::min(send_sets, recv_pool_bytes_ / recv_stride_));
    return sets_;
}

} // namespace dt::perf

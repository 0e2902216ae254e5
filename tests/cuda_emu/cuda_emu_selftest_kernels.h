/* SPDX-License-Identifier: Apache-2.0 */
// Kernels that show what cuda_emu.h runs and what it refuses (cuda_emu_test.cc): each
// launches on the host's memory and returns the launch's error as an int (0: ran).
#pragma once

#include <cstdint>

namespace emu_test {

// out[b] = the sum of in[b * threads .. (b + 1) * threads), a tree in shared memory;
// threads a power of two <= 1024.
int block_sums(int blocks, int threads, const int64_t *in, int64_t *out);
// The same tree without the barriers between its levels: a race.
int block_sums_racy(int blocks, int threads, const int64_t *in, int64_t *out);
// Threads with an odd index return before the block's barrier.
int early_return_before_barrier(int threads);
// Even threads wait at one __syncthreads(), odd ones at another.
int barriers_at_two_lines(int threads);
// out[i] = (blockIdx, threadIdx, blockDim, gridDim) of every thread of a 3-D launch,
// flattened; out holds 8 values per thread.
int indices(unsigned gx, unsigned gy, unsigned bx, unsigned by, int32_t *out);
// A launch of the given shape (nothing to do): what the configuration check says.
int empty_launch(unsigned gx, unsigned gy, unsigned bx, unsigned by);
// A kernel of __launch_bounds__(128) launched with `threads` threads a block.
int bounded_launch(unsigned threads);
// A kernel template whose argument the call deduces: out[i] = v for i < n.
int fill_deduced(int64_t n, double *out, double v);

} // namespace emu_test

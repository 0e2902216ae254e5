/* SPDX-License-Identifier: Apache-2.0 */
// Runs CUDA kernels on the CPU, for tests on machines without a GPU. cu_to_cc.py turns a
// .cu file into C++: it includes this header first and rewrites each
// `kernel<<<grid, block, shared, stream>>>(args)` into a call of cuda_emu::launch; the
// host compiler builds the rest as it is. Device memory is host memory.
//
// A launch runs at once, block after block, each block's threads as fibers of the calling
// thread: a thread runs until it finishes or reaches __syncthreads(), and a barrier is
// passed once every thread of the block has reached it. (Where the block's first thread
// ends without a barrier, the others run as plain calls, which is faster.) What the GPU would leave
// undefined is an error here rather than a result: a barrier that some threads of a
// block skip or reach at another line. So is a configuration the GPU refuses: more than
// 1024 threads a block or than the kernel's __launch_bounds__, a grid dimension out of
// range. Such a launch stops, and cudaGetLastError() returns cudaErrorLaunchFailure,
// cudaErrorInvalidConfiguration or cudaErrorLaunchOutOfResources, with the reason in
// cuda_emu::last_message().
//
// The order in which blocks run, and threads between two barriers, is set_order's: a
// kernel whose threads or blocks race gives different results in different orders, which
// is how the tests find races.
//
// The CUDA headers are the real ones: their vector types, dim3, and the float16 and
// bfloat16 conversions, which have host implementations.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h> // fmaxf, sqrtf, exp ... at global scope, as nvcc offers them

#include <cstddef>
#include <functional>
#include <string>

// Shared memory: a static of the kernel (or device function), so one copy serves the
// block that runs; blocks run one after another.
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#define __syncthreads() ::cuda_emu::syncthreads(__LINE__)
#define threadIdx (::cuda_emu::thread_index())
#define blockIdx (::cuda_emu::block_index())
#define blockDim (::cuda_emu::block_dim())
#define gridDim (::cuda_emu::grid_dim())

namespace cuda_emu {

enum class Order {
    forward, // blocks and threads in index order
    reverse, // last to first
    shuffle, // a fixed pseudo-random permutation of each, another for every launch
};
void set_order(Order order);

const uint3 &thread_index();
const uint3 &block_index();
const dim3 &block_dim();
const dim3 &grid_dim();

// Waits for the block's other threads; line: the call's, which every thread must share.
void syncthreads(int line);

// The reason of the last failed launch, "" after a good one.
const std::string &last_message();
// The last launch's error, cleared by the call (what cudaGetLastError() returns here).
cudaError_t take_last_error();

// Runs body(thread) for every thread of every block of the grid; false (and the last
// error set) when the configuration is refused or a thread broke the rules.
bool run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()> &body);

template <typename Kernel>
auto launch(Kernel kernel, dim3 grid, dim3 block, size_t shared_bytes = 0,
            cudaStream_t stream = nullptr)
{
    (void)stream; // a launch runs at once, in the order of the calls
    return [=](auto &&...args) { run(grid, block, shared_bytes, [&] { kernel(args...); }); };
}

// False (and the last error set) when a block of `block` exceeds the kernel's
// __launch_bounds__ maximum, which the GPU refuses.
bool within_bounds(unsigned max_threads, dim3 block);

// A launch of a kernel declared with __launch_bounds__(max_threads).
template <typename Kernel>
auto launch_bounded(unsigned max_threads, Kernel kernel, dim3 grid, dim3 block,
                    size_t shared_bytes = 0, cudaStream_t stream = nullptr)
{
    (void)stream;
    return [=](auto &&...args) {
        if (within_bounds(max_threads, block))
            run(grid, block, shared_bytes, [&] { kernel(args...); });
    };
}

} // namespace cuda_emu

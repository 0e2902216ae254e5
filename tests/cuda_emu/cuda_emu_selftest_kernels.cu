// SPDX-License-Identifier: Apache-2.0
// Kernels that show what cuda_emu.h runs and what it refuses (cuda_emu_selftest_kernels.h),
// written as CUDA: cu_to_cc.py turns this file into the C++ that cuda_emu_test runs.
#include "cuda_emu_selftest_kernels.h"

#include <cuda_runtime.h>

namespace emu_test {

namespace {

template <bool Sync>
__global__ void block_sums_kernel(const int64_t *in, int64_t *out)
{
    __shared__ int64_t buf[1024];
    const unsigned t = threadIdx.x;
    buf[t] = in[blockIdx.x * blockDim.x + t];
    if (Sync)
        __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h)
            buf[t] += buf[t + h];
        if (Sync)
            __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = buf[0];
}

__global__ void early_return_kernel()
{
    if (threadIdx.x % 2 == 1)
        return;
    __syncthreads();
}

__global__ void two_lines_kernel()
{
    if (threadIdx.x % 2 == 0)
        __syncthreads();
    else
        __syncthreads();
}

__global__ void indices_kernel(int32_t *out)
{
    const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    const unsigned thread = threadIdx.y * blockDim.x + threadIdx.x;
    int32_t *o = out + 8 * (block * blockDim.x * blockDim.y + thread);
    o[0] = int32_t(blockIdx.x);
    o[1] = int32_t(blockIdx.y);
    o[2] = int32_t(threadIdx.x);
    o[3] = int32_t(threadIdx.y);
    o[4] = int32_t(blockDim.x);
    o[5] = int32_t(blockDim.y);
    o[6] = int32_t(gridDim.x);
    o[7] = int32_t(gridDim.y);
}

__global__ void empty_kernel() {}

__global__ void __launch_bounds__(128, 2) bounded_kernel() {}

template <typename T>
__global__ void fill_kernel(int64_t n, T *out, T v)
{
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        out[i] = v;
}

int last() { return int(cudaGetLastError()); }

} // namespace

int block_sums(int blocks, int threads, const int64_t *in, int64_t *out)
{
    block_sums_kernel<true><<<blocks, threads>>>(in, out);
    return last();
}

int block_sums_racy(int blocks, int threads, const int64_t *in, int64_t *out)
{
    block_sums_kernel<false><<<blocks, threads>>>(in, out);
    return last();
}

int early_return_before_barrier(int threads)
{
    early_return_kernel<<<1, threads>>>();
    return last();
}

int barriers_at_two_lines(int threads)
{
    two_lines_kernel<<<1, threads>>>();
    return last();
}

int indices(unsigned gx, unsigned gy, unsigned bx, unsigned by, int32_t *out)
{
    indices_kernel<<<dim3(gx, gy), dim3(bx, by)>>>(out);
    return last();
}

int empty_launch(unsigned gx, unsigned gy, unsigned bx, unsigned by)
{
    empty_kernel<<<dim3(gx, gy), dim3(bx, by), 0, nullptr>>>();
    return last();
}

int bounded_launch(unsigned threads)
{
    bounded_kernel<<<2, threads>>>();
    return last();
}

int fill_deduced(int64_t n, double *out, double v)
{
    fill_kernel<<<3, 32>>>(n, out, v);
    return last();
}

} // namespace emu_test

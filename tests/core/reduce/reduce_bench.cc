// SPDX-License-Identifier: Apache-2.0
// Throughput of the reduction kernels (prints only; never asserts a time). Bytes counted
// are the two inputs read plus the output written.
#include "reduce/reduce.h"

#include <benchmark/benchmark.h>

#include <vector>

namespace {

template <dt_dtype_t Dtype, typename T>
void BM_Reduce(benchmark::State &state)
{
    const size_t n = static_cast<size_t>(state.range(0));
    std::vector<T> a(n, T{1}), b(n, T{0});
    for (auto _ : state) {
        dt::reduce::reduce_into(a.data(), b.data(), n, Dtype, DT_SUM);
        benchmark::DoNotOptimize(a.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(3 * n * sizeof(T)));
}

// float32 sum from L1-resident to DRAM-sized buffers.
BENCHMARK(BM_Reduce<DT_FLOAT32, float>)->RangeMultiplier(8)->Range(1 << 10, 1 << 24);
BENCHMARK(BM_Reduce<DT_FLOAT16, uint16_t>)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_Reduce<DT_BFLOAT16, uint16_t>)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_Reduce<DT_INT8, int8_t>)->Arg(1 << 16)->Arg(1 << 22);

} // namespace

BENCHMARK_MAIN();

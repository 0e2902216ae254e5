/* SPDX-License-Identifier: Apache-2.0 */
// The plugin's hand-written loops: split over the OpenMP threads in aligned chunks, each
// chunk run by a kernel compiled for several instruction sets and picked at load time.
//
// The plugin is built for baseline x86-64 (SSE2) so that it loads on any CPU; a loop in
// SSE2 moves a quarter of what AVX-512 does per instruction, and the Adam update (sqrt
// and division per element) ran scalar: about 7 ms a step for the mlp's 1.8M
// parameters, against about 2 ms now. GCC's
// target_clones compiles a kernel for AVX-512, AVX2 and the baseline and dispatches
// through an ifunc. The kernels contain no OpenMP region: GCC outlines a parallel
// region into a function that target_clones does not clone, so the threads are forked
// here and each calls the cloned kernel on its own chunk.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DTP_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DTP_VECTOR_CLONES
#endif

namespace dtp::onednn {

// Below this many elements one thread does the whole loop: waking the others costs more.
constexpr int64_t kParallelGrain = 1 << 15;

// Calls f(begin, count) over [0, n) in per-thread chunks that start on 16-element
// (64-byte) boundaries. `work` (elements touched, n by default) decides whether the
// loop is worth more than one thread.
template <typename F>
void for_chunks(int64_t n, F &&f, int64_t work = -1)
{
    if ((work < 0 ? n : work) <= kParallelGrain || omp_get_max_threads() == 1) {
        if (n > 0)
            f(int64_t{0}, n);
        return;
    }
#pragma omp parallel
    {
        const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t per = ((n + threads - 1) / threads + 15) / 16 * 16;
        const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
        if (begin < end)
            f(begin, end - begin);
    }
}

} // namespace dtp::onednn

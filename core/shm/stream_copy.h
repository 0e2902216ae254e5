/* SPDX-License-Identifier: Apache-2.0 */
// Copies that another core reads next: non-temporal stores write whole lines to memory
// without reading them in first and leave no copy in this core's cache, so the reader
// gets them from memory (or the shared L3), prefetched, instead of asking this core's
// cache for every line, which is slow when the two cores share no L3 (README.md,
// Measured).
#pragma once

#include <cstddef>

namespace dt::shm {

// memcpy(dst, src, bytes) with non-temporal stores for the 64-byte lines of dst (plain
// stores for a partial line at either end). Call stream_fence() before another thread
// or process is told the data is there: non-temporal stores are not ordered by a
// release store.
void stream_copy(void *dst, const void *src, size_t bytes);
void stream_fence();

} // namespace dt::shm

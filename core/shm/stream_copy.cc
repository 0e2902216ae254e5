// SPDX-License-Identifier: Apache-2.0
#include "shm/stream_copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace dt::shm {

namespace {

// Whole 64-byte lines: dst aligned to 64, src any alignment. SSE2 (every x86-64) is
// enough: the stores wait for memory, not for the width of the registers.
void stream_lines(std::byte *dst, const std::byte *src, size_t lines)
{
#if defined(__x86_64__)
    for (size_t i = 0; i < lines * 64; i += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
#else
    std::memcpy(dst, src, lines * 64);
#endif
}

} // namespace

void stream_copy(void *dst, const void *src, size_t bytes)
{
    auto *d = static_cast<std::byte *>(dst);
    const auto *s = static_cast<const std::byte *>(src);
    const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    const size_t lines = bytes / 64;
    stream_lines(d, s, lines);
    std::memcpy(d + lines * 64, s + lines * 64, bytes - lines * 64);
}

void stream_fence()
{
#if defined(__x86_64__)
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}


} // namespace dt::shm

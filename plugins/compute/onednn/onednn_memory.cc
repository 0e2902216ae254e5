// SPDX-License-Identifier: Apache-2.0
// Memory on the CPU engine: aligned host allocations, copies, fill and casts.
#include "onednn_context.h"
#include "onednn_elem.h"
#include "onednn_ops.h"
#include "onednn_parallel.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace dtp::onednn {

int32_t alloc(void *c, size_t bytes, void **out)
{
    return guarded(c, [&] {
        // aligned_alloc wants a multiple of the alignment.
        void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (p == nullptr)
            throw std::bad_alloc();
        *out = p;
    });
}

int32_t free_memory(void *, void *ptr)
{
    std::free(ptr);
    return DTP_OK;
}

int32_t copy(void *c, void *dst, const void *src, size_t bytes, int32_t)
{
    return guarded(c, [&] { std::memcpy(dst, src, bytes); });
}

int32_t fill(void *c, const dtp_tensor_t *x_desc, void *x, float value)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*x_desc);
        if (x_desc->dtype == DTP_INT32) {
            auto *p = static_cast<int32_t *>(x);
            const auto v = static_cast<int32_t>(value);
#pragma omp parallel for schedule(static)
            for (int64_t i = 0; i < n; ++i)
                p[i] = v;
            return;
        }
        by_dtype(x_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            auto *p = static_cast<T *>(x);
            const T v = from_float<T>(value);
#pragma omp parallel for schedule(static)
            for (int64_t i = 0; i < n; ++i)
                p[i] = v;
        });
    });
}

namespace {

// float32 to bfloat16 as a loop cloned per instruction set (the trainer converts the
// weights it multiplies in bf16 every step).
DTP_VECTOR_CLONES
void f32_to_bf16(int64_t n, const float *__restrict src, uint16_t *__restrict dst)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        dst[i] = bf16_bits(src[i]);
}

} // namespace

int32_t cast(void *c, const dtp_tensor_t *src_desc, const void *src, int32_t dst_dtype,
             void *dst)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*src_desc);
        if (src_desc->dtype == DTP_FLOAT32 && dst_dtype == DTP_BFLOAT16) {
            const auto *s = static_cast<const float *>(src);
            auto *d = static_cast<uint16_t *>(dst);
            for_chunks(n, [&](int64_t b, int64_t m) { f32_to_bf16(m, s + b, d + b); });
            return;
        }
        by_dtype(src_desc->dtype, [&](auto stag) {
            using S = decltype(stag);
            by_dtype(dst_dtype, [&](auto dtag) {
                using D = decltype(dtag);
                const auto *s = static_cast<const S *>(src);
                auto *d = static_cast<D *>(dst);
#pragma omp parallel for schedule(static)
                for (int64_t i = 0; i < n; ++i)
                    d[i] = from_float<D>(to_float(s[i]));
            });
        });
    });
}

} // namespace dtp::onednn

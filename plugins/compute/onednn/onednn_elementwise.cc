// SPDX-License-Identifier: Apache-2.0
// Element-wise operations as OpenMP loops over the element type: add, axpby, scale,
// bias and its gradient, ReLU and its gradient. They are memory bound, so a loop the
// compiler vectorises is as fast as a primitive and needs no cache entry. The float32
// loops the trainer runs every step (bias, ReLU) and the bfloat16 add and ReLU of
// bfloat16 networks go through kernels vectorised per instruction set
// (onednn_parallel.h); the rest take the generic loops.
#include "onednn_context.h"
#include "onednn_elem.h"
#include "onednn_ops.h"
#include "onednn_parallel.h"

#include <cstdint>

namespace dtp::onednn {

namespace {

// y[r, k] += bias[k] over rows of a (rows, ch) matrix.
DTP_VECTOR_CLONES
void add_bias_rows(int64_t rows, int64_t ch, float *__restrict y, const float *__restrict bias)
{
    for (int64_t r = 0; r < rows; ++r) {
        float *p = y + r * ch;
#pragma omp simd
        for (int64_t k = 0; k < ch; ++k)
            p[k] += bias[k];
    }
}

// sum[k] = dy[0, k] + dy[1, k] + ... in row order (the order the per-channel loop
// used), over the columns [0, cols) of a (rows, ld) matrix.
DTP_VECTOR_CLONES
void sum_rows(int64_t rows, int64_t cols, int64_t ld, const float *__restrict dy,
              float *__restrict sum)
{
#pragma omp simd
    for (int64_t k = 0; k < cols; ++k)
        sum[k] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
        const float *q = dy + r * ld;
#pragma omp simd
        for (int64_t k = 0; k < cols; ++k)
            sum[k] += q[k];
    }
}

DTP_VECTOR_CLONES
void add_f32(int64_t n, const float *a, const float *b, float *out)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        out[i] = a[i] + b[i];
}

// a + b, then ReLU as relu_f32 computes it (same bits as the two passes).
DTP_VECTOR_CLONES
void add_relu_f32(int64_t n, const float *a, const float *b, float *out)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = a[i] + b[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

DTP_VECTOR_CLONES
void relu_f32(int64_t n, const float *x, float *y)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

DTP_VECTOR_CLONES
void relu_backward_f32(int64_t n, const float *x, const float *dy, float *dx)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

// ReLU's gradient of dy_a + dy_b: the add's sum, kept where y > 0.
DTP_VECTOR_CLONES
void relu_backward_sum_f32(int64_t n, const float *y, const float *a, const float *b,
                           float *dx)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float s = a[i] + b[i];
        dx[i] = y[i] > 0.0f ? s : 0.0f;
    }
}

// bfloat16 versions for the activations of bfloat16 networks, on the raw 16-bit
// patterns. ReLU needs no arithmetic: a bfloat16 is > 0 exactly when its bits, read
// as a signed 16-bit integer, are in (0, 0x7f80] (+inf included, NaN not), which is
// what the float comparison x > 0 gives.
// The add widens to float and rounds back to nearest even.
DTP_VECTOR_CLONES
void add_bf16(int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *out)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        out[i] = bf16_bits(bf16_value(a[i]) + bf16_value(b[i]));
}

// The sum rounded to bfloat16, then relu_bf16's test on its bits.
DTP_VECTOR_CLONES
void add_relu_bf16(int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *out)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t s = bf16_bits(bf16_value(a[i]) + bf16_value(b[i]));
        const auto v = static_cast<int16_t>(s);
        out[i] = v > 0 && v <= 0x7f80 ? s : uint16_t{0};
    }
}

// add_bf16's rounded sum, kept where relu_backward_bf16 keeps dy.
DTP_VECTOR_CLONES
void relu_backward_sum_bf16(int64_t n, const uint16_t *y, const uint16_t *a,
                            const uint16_t *b, uint16_t *dx)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t s = bf16_bits(bf16_value(a[i]) + bf16_value(b[i]));
        const auto v = static_cast<int16_t>(y[i]);
        dx[i] = v > 0 && v <= 0x7f80 ? s : uint16_t{0};
    }
}

DTP_VECTOR_CLONES
void relu_bf16(int64_t n, const uint16_t *x, uint16_t *y)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<int16_t>(x[i]);
        y[i] = v > 0 && v <= 0x7f80 ? x[i] : uint16_t{0};
    }
}

DTP_VECTOR_CLONES
void relu_backward_bf16(int64_t n, const uint16_t *x, const uint16_t *dy, uint16_t *dx)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<int16_t>(x[i]);
        dx[i] = v > 0 && v <= 0x7f80 ? dy[i] : uint16_t{0};
    }
}

// out = kernel(a, b) over n elements of type T, in chunks across the threads.
template <typename T, typename Kernel>
void chunked(int64_t n, const void *a, const void *b, void *out, Kernel kernel)
{
    const auto *pa = static_cast<const T *>(a);
    const auto *pb = static_cast<const T *>(b);
    auto *po = static_cast<T *>(out);
    for_chunks(n, [&](int64_t s, int64_t m) { kernel(m, pa + s, pb + s, po + s); });
}

} // namespace

int32_t add(void *c, const dtp_tensor_t *desc, const void *a, const void *b, void *out)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*desc);
        if (desc->dtype == DTP_FLOAT32) {
            chunked<float>(n, a, b, out, add_f32);
            return;
        }
        if (desc->dtype == DTP_BFLOAT16) {
            chunked<uint16_t>(n, a, b, out, add_bf16);
            return;
        }
        by_dtype(desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *pa = static_cast<const T *>(a);
            const auto *pb = static_cast<const T *>(b);
            auto *po = static_cast<T *>(out);
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; ++i)
                po[i] = from_float<T>(to_float(pa[i]) + to_float(pb[i]));
        });
    });
}

int32_t axpby(void *c, const dtp_tensor_t *desc, float alpha, const void *x, float beta,
              void *y)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*desc);
        by_dtype(desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            auto *py = static_cast<T *>(y);
            if (beta == 0.0f) {
#pragma omp parallel for simd schedule(static)
                for (int64_t i = 0; i < n; ++i)
                    py[i] = from_float<T>(alpha * to_float(px[i]));
            } else {
#pragma omp parallel for simd schedule(static)
                for (int64_t i = 0; i < n; ++i)
                    py[i] = from_float<T>(alpha * to_float(px[i]) + beta * to_float(py[i]));
            }
        });
    });
}

int32_t scale(void *c, const dtp_tensor_t *desc, float alpha, void *x)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*desc);
        by_dtype(desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            auto *px = static_cast<T *>(x);
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; ++i)
                px[i] = from_float<T>(alpha * to_float(px[i]));
        });
    });
}

int32_t bias_add(void *c, const dtp_tensor_t *y_desc, void *y, const float *bias)
{
    return guarded(c, [&] {
        const int64_t rows = y_desc->dims[0], ch = y_desc->dims[1], sp = spatial_of(*y_desc);
        if (y_desc->dtype == DTP_FLOAT32 && sp == 1) {
            auto *py = static_cast<float *>(y);
            for_chunks(rows * ch, [&](int64_t b, int64_t n) {
                // Whole rows per thread: the chunk's bounds rounded to rows.
                const int64_t r0 = (b + ch - 1) / ch, r1 = (b + n + ch - 1) / ch;
                if (r0 < r1)
                    add_bias_rows(r1 - r0, ch, py + r0 * ch, bias);
            });
            return;
        }
        by_dtype(y_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            auto *py = static_cast<T *>(y);
#pragma omp parallel for collapse(2) schedule(static)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t k = 0; k < ch; ++k) {
                    T *p = py + (r * ch + k) * sp;
                    const float b = bias[k];
                    for (int64_t i = 0; i < sp; ++i)
                        p[i] = from_float<T>(to_float(p[i]) + b);
                }
        });
    });
}

int32_t bias_backward(void *c, const dtp_tensor_t *dy_desc, const void *dy, float *dbias)
{
    return guarded(c, [&] {
        const int64_t rows = dy_desc->dims[0], ch = dy_desc->dims[1], sp = spatial_of(*dy_desc);
        if (dy_desc->dtype == DTP_FLOAT32 && sp == 1) {
            const auto *p = static_cast<const float *>(dy);
            // Each thread a block of channels, each summed in row order: the same sums
            // whatever the thread count.
            for_chunks(
                ch, [&](int64_t k, int64_t n) { sum_rows(rows, n, ch, p + k, dbias + k); },
                rows * ch);
            return;
        }
        by_dtype(dy_desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *p = static_cast<const T *>(dy);
            // One thread per channel, summing in a fixed order, so the result does not
            // depend on the thread count.
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < ch; ++k) {
                float sum = 0.0f;
                for (int64_t r = 0; r < rows; ++r) {
                    const T *q = p + (r * ch + k) * sp;
                    for (int64_t i = 0; i < sp; ++i)
                        sum += to_float(q[i]);
                }
                dbias[k] = sum;
            }
        });
    });
}

int32_t add_relu(void *c, const dtp_tensor_t *desc, const void *a, const void *b, void *out)
{
    if (desc->dtype == DTP_FLOAT32 || desc->dtype == DTP_BFLOAT16)
        return guarded(c, [&] {
            const int64_t n = count_of(*desc);
            if (desc->dtype == DTP_FLOAT32)
                chunked<float>(n, a, b, out, add_relu_f32);
            else
                chunked<uint16_t>(n, a, b, out, add_relu_bf16);
        });
    // float16: the two passes (rare; not worth a kernel).
    const int32_t rc = add(c, desc, a, b, out);
    return rc != DTP_OK ? rc : relu_forward(c, desc, out, out);
}

int32_t relu_backward_sum(void *c, const dtp_tensor_t *desc, const void *y, const void *a,
                          const void *b, void *dx)
{
    const int64_t n = count_of(*desc);
    if (desc->dtype == DTP_FLOAT32)
        return guarded(c, [&] {
            const auto *py = static_cast<const float *>(y);
            const auto *pa = static_cast<const float *>(a), *pb = static_cast<const float *>(b);
            auto *pdx = static_cast<float *>(dx);
            for_chunks(n, [&](int64_t s, int64_t m) {
                relu_backward_sum_f32(m, py + s, pa + s, pb + s, pdx + s);
            });
        });
    if (desc->dtype == DTP_BFLOAT16)
        return guarded(c, [&] {
            const auto *py = static_cast<const uint16_t *>(y);
            const auto *pa = static_cast<const uint16_t *>(a);
            const auto *pb = static_cast<const uint16_t *>(b);
            auto *pdx = static_cast<uint16_t *>(dx);
            for_chunks(n, [&](int64_t s, int64_t m) {
                relu_backward_sum_bf16(m, py + s, pa + s, pb + s, pdx + s);
            });
        });
    // float16: the two passes, in place in dx once the add has read both (as add_relu).
    const int32_t rc = add(c, desc, a, b, dx);
    return rc != DTP_OK ? rc : relu_backward(c, desc, y, dx, dx);
}

int32_t relu_forward(void *c, const dtp_tensor_t *desc, const void *x, void *y)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*desc);
        if (desc->dtype == DTP_FLOAT32) {
            const auto *px = static_cast<const float *>(x);
            auto *py = static_cast<float *>(y);
            for_chunks(n, [&](int64_t b, int64_t m) { relu_f32(m, px + b, py + b); });
            return;
        }
        if (desc->dtype == DTP_BFLOAT16) {
            const auto *px = static_cast<const uint16_t *>(x);
            auto *py = static_cast<uint16_t *>(y);
            for_chunks(n, [&](int64_t b, int64_t m) { relu_bf16(m, px + b, py + b); });
            return;
        }
        by_dtype(desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            auto *py = static_cast<T *>(y);
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; ++i) {
                const float v = to_float(px[i]);
                py[i] = v > 0.0f ? px[i] : from_float<T>(0.0f);
            }
        });
    });
}

int32_t relu_backward(void *c, const dtp_tensor_t *desc, const void *x, const void *dy,
                      void *dx)
{
    return guarded(c, [&] {
        const int64_t n = count_of(*desc);
        if (desc->dtype == DTP_FLOAT32) {
            chunked<float>(n, x, dy, dx, relu_backward_f32);
            return;
        }
        if (desc->dtype == DTP_BFLOAT16) {
            chunked<uint16_t>(n, x, dy, dx, relu_backward_bf16);
            return;
        }
        by_dtype(desc->dtype, [&](auto tag) {
            using T = decltype(tag);
            const auto *px = static_cast<const T *>(x);
            const auto *pdy = static_cast<const T *>(dy);
            auto *pdx = static_cast<T *>(dx);
            // dy is loaded whatever the sign: a load under the condition kept the loop
            // scalar, with a branch mispredicted on every other element (20x slower).
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; ++i) {
                const T g = pdy[i];
                pdx[i] = to_float(px[i]) > 0.0f ? g : from_float<T>(0.0f);
            }
        });
    });
}

} // namespace dtp::onednn

// SPDX-License-Identifier: Apache-2.0
// Element-wise CUDA kernels of the cuDNN plugin. Grid-stride loops; every float type is
// read and written through float (cudnn_elem.cuh), so one template serves f32, f16 and
// bf16.
#include "cudnn_elem.cuh"
#include "cudnn_kernels.h"

#include <cstdint>
#include <type_traits>

namespace dtp::cudnn {

namespace {

#define GRID_LOOP(i, n)                                                                  \
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);          \
         i += int64_t(blockDim.x) * gridDim.x)

dim3 grid(int64_t n)
{
    int64_t blocks = (n + 255) / 256;
    return dim3(static_cast<unsigned>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096));
}

template <typename T>
__global__ void fill_kernel(int64_t n, T *x, float v) { GRID_LOOP(i, n) store(x, i, v); }

__global__ void fill_int_kernel(int64_t n, int32_t *x, int32_t v) { GRID_LOOP(i, n) x[i] = v; }

template <typename S, typename D>
__global__ void cast_kernel(int64_t n, const S *s, D *d) { GRID_LOOP(i, n) store(d, i, load(s, i)); }

template <typename T>
__global__ void add_kernel(int64_t n, const T *a, const T *b, T *c)
{
    GRID_LOOP(i, n) store(c, i, load(a, i) + load(b, i));
}

// The sum rounded to T, then ReLU on that value, as the add and ReLU kernels would give.
template <typename T>
__global__ void add_relu_kernel(int64_t n, const T *a, const T *b, T *c)
{
    GRID_LOOP(i, n) store(c, i, fmaxf(to_float(from_float<T>(load(a, i) + load(b, i))), 0.0f));
}

template <typename T>
__global__ void axpby_kernel(int64_t n, float alpha, const T *x, float beta, T *y)
{
    GRID_LOOP(i, n) store(y, i, beta == 0.0f ? alpha * load(x, i) : alpha * load(x, i) + beta * load(y, i));
}

template <typename T>
__global__ void bias_kernel(int64_t n, int64_t ch, int64_t sp, T *y, const float *b)
{
    GRID_LOOP(i, n) store(y, i, load(y, i) + b[(i / sp) % ch]);
}

// One thread per element of the destination: (K, C, RS) <-> (K, RS, C), or in place,
// with a conversion of the element type on the way.
template <typename S, typename D>
__global__ void filter_convert_kernel(int64_t k, int64_t c, int64_t rs, const S *src, D *dst,
                                      FilterMove move)
{
    GRID_LOOP(i, k * c * rs) {
        const int64_t kk = i / (c * rs), rest = i % (c * rs);
        int64_t from = i;
        if (move == FilterMove::to_channels_last) { // dst (kk, tap, ch) from src (kk, ch, tap)
            const int64_t tap = rest / c, ch = rest % c;
            from = (kk * c + ch) * rs + tap;
        } else if (move == FilterMove::from_channels_last) { // dst (kk, ch, tap) from (kk, tap, ch)
            const int64_t ch = rest / rs, tap = rest % rs;
            from = (kk * rs + tap) * c + ch;
        }
        store(dst, i, load(src, from));
    }
}

// float32 element-wise passes on 16-byte-aligned arrays, four elements per 128-bit load
// and store: these passes are bound by memory bandwidth, and one access of 16 bytes moves
// them at about 1.3x the rate of four of 4 bytes (ReLU, its gradient and the residual add
// took 8.7 ms of a ResNet-50 step of 41 ms on an H100 with scalar accesses). The last
// n % 4 elements go one by one.
bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

struct ReluOp {
    __device__ float operator()(float x) const { return fmaxf(x, 0.0f); }
};
struct ReluGradOp {
    __device__ float operator()(float x, float dy) const { return x > 0.0f ? dy : 0.0f; }
};
struct AddOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct AddReluOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a + b, 0.0f); }
};

template <typename F>
__global__ void unary4_kernel(int64_t n, const float *x, float *y, F f)
{
    const int64_t n4 = n / 4;
    GRID_LOOP(i, n4) {
        float4 v = reinterpret_cast<const float4 *>(x)[i];
        v.x = f(v.x);
        v.y = f(v.y);
        v.z = f(v.z);
        v.w = f(v.w);
        reinterpret_cast<float4 *>(y)[i] = v;
    }
    GRID_LOOP(i, n - n4 * 4) y[n4 * 4 + i] = f(x[n4 * 4 + i]);
}

template <typename F>
__global__ void binary4_kernel(int64_t n, const float *a, const float *b, float *c, F f)
{
    const int64_t n4 = n / 4;
    GRID_LOOP(i, n4) {
        const float4 u = reinterpret_cast<const float4 *>(a)[i];
        const float4 v = reinterpret_cast<const float4 *>(b)[i];
        reinterpret_cast<float4 *>(c)[i] =
            make_float4(f(u.x, v.x), f(u.y, v.y), f(u.z, v.z), f(u.w, v.w));
    }
    GRID_LOOP(i, n - n4 * 4) c[n4 * 4 + i] = f(a[n4 * 4 + i], b[n4 * 4 + i]);
}

template <typename T>
__global__ void relu_kernel(int64_t n, const T *x, T *y)
{
    GRID_LOOP(i, n) store(y, i, fmaxf(load(x, i), 0.0f));
}

template <typename T>
__global__ void relu_bwd_kernel(int64_t n, const T *x, const T *dy, T *dx)
{
    GRID_LOOP(i, n) store(dx, i, load(x, i) > 0.0f ? load(dy, i) : 0.0f);
}

// ReLU's gradient of a + b: the add kernel's rounded sum where y > 0.
template <typename T>
__global__ void relu_bwd_sum_kernel(int64_t n, const T *y, const T *a, const T *b, T *dx)
{
    GRID_LOOP(i, n)
    store(dx, i, load(y, i) > 0.0f ? to_float(from_float<T>(load(a, i) + load(b, i))) : 0.0f);
}

// float32 on 16-byte aligned buffers: four elements a thread, as binary4_kernel.
__global__ void relu_bwd_sum4_kernel(int64_t n, const float *y, const float *a, const float *b,
                                     float *dx)
{
    const int64_t n4 = n / 4;
    GRID_LOOP(i, n4) {
        const float4 m = reinterpret_cast<const float4 *>(y)[i];
        const float4 u = reinterpret_cast<const float4 *>(a)[i];
        const float4 v = reinterpret_cast<const float4 *>(b)[i];
        reinterpret_cast<float4 *>(dx)[i] =
            make_float4(m.x > 0.0f ? u.x + v.x : 0.0f, m.y > 0.0f ? u.y + v.y : 0.0f,
                        m.z > 0.0f ? u.z + v.z : 0.0f, m.w > 0.0f ? u.w + v.w : 0.0f);
    }
    GRID_LOOP(i, n - n4 * 4) {
        const int64_t j = n4 * 4 + i;
        dx[j] = y[j] > 0.0f ? a[j] + b[j] : 0.0f;
    }
}

// One thread per row: batches are small (hundreds of rows of tens of classes).
__global__ void xent_kernel(int64_t rows, int64_t k, const float *x, const int32_t *labels,
                            float *p, float *row_loss, int32_t *row_hit, int32_t *bad)
{
    GRID_LOOP(r, rows) {
        const float *xr = x + r * k;
        float *pr = p + r * k;
        int64_t best = 0;
        for (int64_t j = 1; j < k; ++j)
            if (xr[j] > xr[best])
                best = j;
        const float mx = xr[best];
        double sum = 0;
        for (int64_t j = 0; j < k; ++j)
            sum += exp(double(xr[j] - mx));
        const double ls = log(sum);
        for (int64_t j = 0; j < k; ++j)
            pr[j] = float(exp(double(xr[j] - mx) - ls));
        const int32_t label = labels[r];
        if (label < 0 || label >= k) {
            *bad = 1;
            row_loss[r] = 0;
            row_hit[r] = 0;
        } else {
            row_loss[r] = float(ls - double(xr[label] - mx));
            row_hit[r] = best == label;
        }
    }
}

__global__ void xent_bwd_kernel(int64_t rows, int64_t k, const float *p, const int32_t *labels,
                                float scale, float *d)
{
    GRID_LOOP(i, rows * k) {
        const int64_t r = i / k, j = i % k;
        d[i] = (p[i] - (j == labels[r] ? 1.0f : 0.0f)) * scale;
    }
}

__global__ void sgd_kernel(int64_t n, float lr, float mu, float wd, int nesterov, float *w,
                           const float *g, float *buf)
{
    GRID_LOOP(i, n) {
        float d = g[i] + wd * w[i];
        if (mu != 0.0f) {
            const float b = mu * buf[i] + d;
            buf[i] = b;
            d = nesterov ? d + mu * b : b;
        }
        w[i] -= lr * d;
    }
}

__global__ void adam_kernel(int64_t n, float lr, float b1, float b2, float eps, float wd,
                            int decoupled, float c1, float root_c2, float *w, const float *g,
                            float *m, float *v)
{
    GRID_LOOP(i, n) {
        float gi = g[i];
        if (decoupled)
            w[i] *= 1.0f - lr * wd;
        else
            gi += wd * w[i];
        const float mi = b1 * m[i] + (1.0f - b1) * gi;
        const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] -= (lr / c1) * mi / (sqrtf(vi) / root_c2 + eps);
    }
}

} // namespace

int launch_filter_convert(stream_t s, int src_dtype, int dst_dtype, int64_t k, int64_t c,
                          int64_t rs, const void *src, void *dst, FilterMove move)
{
    return by_dtype(src_dtype, [&](auto stag) {
        using S = std::remove_pointer_t<decltype(stag)>;
        return by_dtype(dst_dtype, [&](auto dtag) {
            using D = std::remove_pointer_t<decltype(dtag)>;
            filter_convert_kernel<<<grid(k * c * rs), 256, 0, s>>>(
                k, c, rs, static_cast<const S *>(src), static_cast<D *>(dst), move);
            return last_launch_error();
        });
    });
}

int launch_fill(stream_t s, int dtype, int64_t n, void *x, float value)
{
    if (dtype == kDtypeI32) {
        fill_int_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<int32_t *>(x), int32_t(value));
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        fill_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<T *>(x), value);
        return last_launch_error();
    });
}

int launch_cast(stream_t s, int src_dtype, int dst_dtype, int64_t n, const void *src, void *dst)
{
    return by_dtype(src_dtype, [&](auto stag) {
        using S = std::remove_pointer_t<decltype(stag)>;
        return by_dtype(dst_dtype, [&](auto dtag) {
            using D = std::remove_pointer_t<decltype(dtag)>;
            cast_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const S *>(src), static_cast<D *>(dst));
            return last_launch_error();
        });
    });
}

int launch_add(stream_t s, int dtype, int64_t n, const void *a, const void *b, void *c)
{
    if (dtype == kDtypeF32 && aligned16(a) && aligned16(b) && aligned16(c)) {
        binary4_kernel<<<grid(n / 4 + 1), 256, 0, s>>>(n, static_cast<const float *>(a),
                                                       static_cast<const float *>(b),
                                                       static_cast<float *>(c), AddOp{});
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        add_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const T *>(a), static_cast<const T *>(b),
                                           static_cast<T *>(c));
        return last_launch_error();
    });
}

int launch_add_relu(stream_t s, int dtype, int64_t n, const void *a, const void *b, void *c)
{
    if (dtype == kDtypeF32 && aligned16(a) && aligned16(b) && aligned16(c)) {
        binary4_kernel<<<grid(n / 4 + 1), 256, 0, s>>>(n, static_cast<const float *>(a),
                                                       static_cast<const float *>(b),
                                                       static_cast<float *>(c), AddReluOp{});
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        add_relu_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const T *>(a),
                                                static_cast<const T *>(b), static_cast<T *>(c));
        return last_launch_error();
    });
}

int launch_axpby(stream_t s, int dtype, int64_t n, float alpha, const void *x, float beta, void *y)
{
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        axpby_kernel<<<grid(n), 256, 0, s>>>(n, alpha, static_cast<const T *>(x), beta,
                                             static_cast<T *>(y));
        return last_launch_error();
    });
}

int launch_bias_add(stream_t s, int dtype, int64_t rows, int64_t ch, int64_t spatial, void *y,
                    const float *bias)
{
    const int64_t n = rows * ch * spatial;
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        bias_kernel<<<grid(n), 256, 0, s>>>(n, ch, spatial, static_cast<T *>(y), bias);
        return last_launch_error();
    });
}

int launch_relu(stream_t s, int dtype, int64_t n, const void *x, void *y)
{
    if (dtype == kDtypeF32 && aligned16(x) && aligned16(y)) {
        unary4_kernel<<<grid(n / 4 + 1), 256, 0, s>>>(n, static_cast<const float *>(x),
                                                      static_cast<float *>(y), ReluOp{});
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        relu_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const T *>(x), static_cast<T *>(y));
        return last_launch_error();
    });
}

int launch_relu_backward(stream_t s, int dtype, int64_t n, const void *x, const void *dy, void *dx)
{
    if (dtype == kDtypeF32 && aligned16(x) && aligned16(dy) && aligned16(dx)) {
        binary4_kernel<<<grid(n / 4 + 1), 256, 0, s>>>(n, static_cast<const float *>(x),
                                                       static_cast<const float *>(dy),
                                                       static_cast<float *>(dx), ReluGradOp{});
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        relu_bwd_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const T *>(x),
                                                static_cast<const T *>(dy), static_cast<T *>(dx));
        return last_launch_error();
    });
}

int launch_relu_backward_sum(stream_t s, int dtype, int64_t n, const void *y, const void *a,
                             const void *b, void *dx)
{
    if (dtype == kDtypeF32 && aligned16(y) && aligned16(a) && aligned16(b) && aligned16(dx)) {
        relu_bwd_sum4_kernel<<<grid(n / 4 + 1), 256, 0, s>>>(
            n, static_cast<const float *>(y), static_cast<const float *>(a),
            static_cast<const float *>(b), static_cast<float *>(dx));
        return last_launch_error();
    }
    return by_dtype(dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        relu_bwd_sum_kernel<<<grid(n), 256, 0, s>>>(n, static_cast<const T *>(y),
                                                    static_cast<const T *>(a),
                                                    static_cast<const T *>(b),
                                                    static_cast<T *>(dx));
        return last_launch_error();
    });
}

int launch_softmax_xent(stream_t s, int64_t rows, int64_t k, const float *logits,
                        const int32_t *labels, float *probs, float *row_loss, int32_t *row_hit,
                        int32_t *bad_label)
{
    xent_kernel<<<grid(rows), 256, 0, s>>>(rows, k, logits, labels, probs, row_loss, row_hit,
                                           bad_label);
    return last_launch_error();
}

int launch_softmax_xent_backward(stream_t s, int64_t rows, int64_t k, const float *probs,
                                 const int32_t *labels, float scale, float *dlogits)
{
    xent_bwd_kernel<<<grid(rows * k), 256, 0, s>>>(rows, k, probs, labels, scale, dlogits);
    return last_launch_error();
}

int launch_sgd(stream_t s, int64_t n, float lr, float momentum, float wd, int nesterov, float *w,
               const float *g, float *buf)
{
    sgd_kernel<<<grid(n), 256, 0, s>>>(n, lr, momentum, wd, nesterov, w, g, buf);
    return last_launch_error();
}

int launch_adam(stream_t s, int64_t n, float lr, float b1, float b2, float eps, float wd,
                int decoupled, float c1, float root_c2, float *w, const float *g, float *m, float *v)
{
    adam_kernel<<<grid(n), 256, 0, s>>>(n, lr, b1, b2, eps, wd, decoupled, c1, root_c2, w, g, m, v);
    return last_launch_error();
}

} // namespace dtp::cudnn

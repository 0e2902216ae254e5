// SPDX-License-Identifier: Apache-2.0
// Batch normalisation kernels (cudnn_bn_kernels.h). Each op is three launches on the
// stream: per-channel sums over the batch, split into parts so that the whole GPU works on
// them; a small kernel that adds each channel's parts in a fixed order and turns them into
// the statistics and per-channel coefficients; an element-wise pass with those
// coefficients. No atomics: the same input gives the same bits on the same GPU.
//
// Two layouts, two parallelisations (BnShape):
// - planes, (N, C, H, W) with H * W > 1: a channel is N contiguous planes. A block works
//   on one channel (blockIdx.x), its threads along a plane (x, coalesced) and across
//   planes (y); blockIdx.y splits the planes into parts.
// - rows, (rows, C): a channel is a column with a stride of C elements. A block's threads
//   run along a row (x, coalesced across channels, each thread owning 1 or 4 adjacent
//   channels) and down the rows (y); blockIdx.x tiles the channels, blockIdx.y splits the
//   rows into parts.
// Where the contiguous extent (H * W, or C) is a multiple of 4 and the tensors are
// aligned, a thread moves 4 elements per access (16 bytes of float32, 8 of bfloat16):
// these passes are bound by memory bandwidth.
//
// The statistics are sums of d = x - K and d^2, K the channel's first element (the
// "shifted data" algorithm), and var = E[d^2] - E[d]^2. One read of x gives both moments:
// a two-pass mean-then-variance would read x once more (a third more time in the forward)
// and Welford's update costs a division per element. The shift keeps the subtraction
// free of the cancellation that the raw sum of squares suffers when |mean| >> std: K is a
// sample of the channel, so E[d]^2 is of the order of var itself, not of mean^2. A thread
// adds at most 256 terms in float before it moves them to its double accumulators;
// blocks, parts and the statistics add in double. The backward's sums, of dy and of
// dy (x - mean) with the saved mean, go through the same kernels.
//
// ReLU fused (the Relu template flag): the forward's element-wise pass stores
// fmaxf(y, 0), as the ReLU kernel would from y; the backward reads the forward's output
// beside dy and takes dy where it is > 0, else 0, in the sums and in the element-wise
// pass, which is what the ReLU backward kernel would have written for them.
// A shortcut added before the ReLU (the Add flag, forward only): the element-wise pass
// reads z where the backward reads dy and stores max(y + z, 0) with y and the sum rounded
// to T as the batch norm and the add_relu kernel would have stored them, without writing
// y and reading it back.
#include "cudnn_bn_kernels.h"

#include "cudnn_elem.cuh"

#include <algorithm>
#include <initializer_list>
#include <type_traits>

namespace dtp::cudnn {

namespace {

constexpr int kThreads = 256; // per block, a power of two
// Rows or planes a thread loads before it uses any of them: kUnroll loads in flight per
// thread (one would leave the GPU waiting on memory latency with the threads it holds).
constexpr int kUnroll = 4;
// Batches a thread adds in float before it moves them to double: at most
// kFlush * kUnroll * 4 = 256 terms.
constexpr int kFlush = 16;
// The finishing block: kFinishX channels x kFinishY threads over the parts, so that a
// channel of kMaxParts parts costs each thread a few rounds of loads, not a thousand.
constexpr int kFinishX = 32, kFinishY = 32;
constexpr int64_t kMaxParts = 1024; // parts of a channel's sums
constexpr int64_t kMaxGridY = 65535;

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
    T v[V];
};

// p[i .. i + V) as float; i is a multiple of V and p aligned to a Pack where V > 1.
template <int V, typename T>
__device__ inline void load_pack(const T *p, int64_t i, float (&out)[V])
{
    const Pack<T, V> q = *reinterpret_cast<const Pack<T, V> *>(p + i);
#pragma unroll
    for (int k = 0; k < V; ++k)
        out[k] = to_float(q.v[k]);
}

template <int V, typename T>
__device__ inline void store_pack(T *p, int64_t i, const float (&in)[V])
{
    Pack<T, V> q;
#pragma unroll
    for (int k = 0; k < V; ++k)
        q.v[k] = from_float<T>(in[k]);
    *reinterpret_cast<Pack<T, V> *>(p + i) = q;
}

__device__ inline void add_to(double2 &a, const double2 &b)
{
    a.x += b.x;
    a.y += b.y;
}

// A thread's two sums of one channel: the last few batches in float, the rest in double.
struct Sums {
    float a = 0, b = 0;
    double da = 0, db = 0;
    int batches = 0;
    __device__ void add(float x, float y)
    {
        a += x;
        b += y;
    }
    __device__ void batch_done()
    {
        if (++batches == kFlush)
            flush();
    }
    __device__ void flush()
    {
        da += a;
        db += b;
        a = b = 0;
        batches = 0;
    }
    __device__ double2 total()
    {
        flush();
        return make_double2(da, db);
    }
};

// One element's terms: forward (d, d^2) with d = x - K; backward (dy, dy (x - mean)).
template <bool Grad>
__device__ inline void accumulate(Sums &s, float x, float dy, float centre)
{
    const float d = x - centre;
    if constexpr (Grad)
        s.add(dy, dy * d);
    else
        s.add(d, d * d);
}

// A thread's batch: the kUnroll packs of x (and dy, for Grad) at element offsets at[u],
// all loads issued before any value is used; at[u] < 0 (past the end) reads as x = fill,
// dy = 0, whose terms are zero. Grad with Relu: dy is kept where mask (the fused
// forward's output) is > 0 and read as 0 elsewhere.
template <int V, bool Grad, bool Relu, bool Add = false, typename T>
__device__ inline void load_batch(const T *x, const T *dy, const T *mask,
                                  const int64_t (&at)[kUnroll], const float (&fill)[V],
                                  float (&xv)[kUnroll][V], float (&gv)[kUnroll][V])
{
    float mv[kUnroll][V];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
            xv[u][k] = fill[k];
            gv[u][k] = 0.0f;
            mv[u][k] = 0.0f;
        }
        if (at[u] >= 0) {
            load_pack<V>(x, at[u], xv[u]);
            if constexpr (Grad || Add)
                load_pack<V>(dy, at[u], gv[u]);
            if constexpr (Grad && Relu)
                load_pack<V>(mask, at[u], mv[u]);
        }
    }
    if constexpr (Grad && Relu) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int k = 0; k < V; ++k)
                gv[u][k] = mv[u][k] > 0.0f ? gv[u][k] : 0.0f;
    }
}

// The element-wise pass with a channel's coefficients k (one 16-byte load):
// forward y = k.x (x - k.y) + k.z (then ReLU's fmaxf(y, 0) with Relu); backward
// dx = k.x dy + k.z (x - k.y) + k.w (dy already masked by load_batch with Relu).
template <bool Grad, bool Relu, bool Add = false, typename T = float>
__device__ inline float apply(const float4 &k, float x, float dy)
{
    if constexpr (Grad)
        return k.x * dy + k.z * (x - k.y) + k.w;
    else if constexpr (Add) // dy holds the shortcut z
        return fmaxf(to_float(from_float<T>(to_float(from_float<T>(k.x * (x - k.y) + k.z)) +
                                            dy)),
                     0.0f);
    else if constexpr (Relu)
        return fmaxf(k.x * (x - k.y) + k.z, 0.0f);
    else
        return k.x * (x - k.y) + k.z;
}

// Planes: block (along a plane, across planes), blockIdx.x the channel, blockIdx.y the
// part. parts[part * C + c] = the block's sums; centre: the saved mean (Grad) or x's
// first element of the channel.
template <typename T, int V, bool Grad, bool Relu>
__global__ void __launch_bounds__(kThreads)
planes_sums_kernel(BnShape g, const T *x, const T *dy, const T *mask, const float *mean,
                   double2 *parts)
{
    const int64_t c = blockIdx.x, packs = g.spatial / V;
    const int64_t step = int64_t(gridDim.y) * blockDim.y; // between a thread's planes
    float centre[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
        centre[k] = Grad ? mean[c] : load(x, c * g.spatial);
    Sums s;
    // A batch: the same pack of kUnroll of the thread's planes.
    for (int64_t n0 = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; n0 < g.n;
         n0 += kUnroll * step) {
        for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
            int64_t at[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t n = n0 + u * step;
                at[u] = n < g.n ? (n * g.channels + c) * g.spatial + i * V : -1;
            }
            float xv[kUnroll][V], gv[kUnroll][V];
            load_batch<V, Grad, Relu>(x, dy, mask, at, centre, xv, gv);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
#pragma unroll
                for (int k = 0; k < V; ++k)
                    accumulate<Grad>(s, xv[u][k], gv[u][k], centre[k]);
            s.batch_done();
        }
    }
    __shared__ double2 buf[kThreads];
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    buf[t] = s.total();
    __syncthreads();
    for (int h = kThreads / 2; h > 0; h /= 2) {
        if (t < h)
            add_to(buf[t], buf[t + h]);
        __syncthreads();
    }
    if (t == 0)
        parts[blockIdx.y * g.channels + c] = buf[0];
}

// Rows: block (along a row in packs of V channels, down the rows), blockIdx.x the tile of
// channels, blockIdx.y the part. parts[part * C + c] for the block's channels.
template <typename T, int V, bool Grad, bool Relu>
__global__ void __launch_bounds__(kThreads)
rows_sums_kernel(BnShape g, const T *x, const T *dy, const T *mask, const float *mean,
                 double2 *parts)
{
    const int64_t c0 = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * V;
    const bool mine = c0 < g.channels;
    Sums s[V];
    if (mine) {
        float centre[V];
#pragma unroll
        for (int k = 0; k < V; ++k)
            centre[k] = Grad ? mean[c0 + k] : load(x, c0 + k);
        const int64_t step = int64_t(gridDim.y) * blockDim.y; // between a thread's rows
        // A batch: kUnroll of the thread's rows.
        for (int64_t r0 = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r0 < g.n;
             r0 += kUnroll * step) {
            int64_t at[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t r = r0 + u * step;
                at[u] = r < g.n ? r * g.channels + c0 : -1;
            }
            float xv[kUnroll][V], gv[kUnroll][V];
            load_batch<V, Grad, Relu>(x, dy, mask, at, centre, xv, gv);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
#pragma unroll
                for (int k = 0; k < V; ++k)
                    accumulate<Grad>(s[k], xv[u][k], gv[u][k], centre[k]);
#pragma unroll
            for (int k = 0; k < V; ++k)
                s[k].batch_done();
        }
    }
    __shared__ double2 buf[kThreads * V];
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < V; ++k)
        buf[t * V + k] = s[k].total();
    __syncthreads();
    for (int h = blockDim.y / 2; h > 0; h /= 2) { // down the rows: same x, y and y + h
        if (threadIdx.y < h)
            for (int k = 0; k < V; ++k)
                add_to(buf[t * V + k], buf[(t + h * blockDim.x) * V + k]);
        __syncthreads();
    }
    if (threadIdx.y == 0 && mine)
        for (int k = 0; k < V; ++k)
            parts[blockIdx.y * g.channels + c0 + k] = buf[t * V + k];
}

// Channel c's sums over its parts, added in a fixed order by a block of kFinishX
// channels x kFinishY threads over the parts; the total is valid in the threads with
// threadIdx.y == 0.
__device__ double2 channel_total(const BnShape &g, int64_t parts, const double2 *part,
                                 int64_t c)
{
    __shared__ double2 buf[kFinishY][kFinishX];
    double2 t = make_double2(0.0, 0.0);
    if (c < g.channels) {
#pragma unroll 4
        for (int64_t p = threadIdx.y; p < parts; p += kFinishY)
            add_to(t, part[p * g.channels + c]);
    }
    buf[threadIdx.y][threadIdx.x] = t;
    __syncthreads();
    for (int h = kFinishY / 2; h > 0; h /= 2) {
        if (threadIdx.y < h)
            add_to(buf[threadIdx.y][threadIdx.x], buf[threadIdx.y + h][threadIdx.x]);
        __syncthreads();
    }
    return buf[0][threadIdx.x];
}

// The forward's statistics from the sums of d = x - K: save_mean and save_invstd, the
// running statistics (PyTorch's update, unbiased variance; a channel of one element
// keeps its biased one), and the coefficients of y = scale invstd (x - mean) + shift.
template <typename T>
__global__ void __launch_bounds__(kFinishX * kFinishY)
finish_forward_kernel(BnShape g, int64_t parts, const double2 *part, const T *x,
                      const float *scale, const float *shift, float epsilon, float momentum,
                      float *save_mean, float *save_invstd, float *running_mean,
                      float *running_var, float4 *coef)
{
    const int64_t c = blockIdx.x * int64_t(kFinishX) + threadIdx.x;
    const double2 sums = channel_total(g, parts, part, c);
    if (threadIdx.y != 0 || c >= g.channels)
        return;
    const int64_t count = g.n * g.spatial;
    const double m = sums.x / double(count); // E[d]
    const double mean = double(load(x, c * g.spatial)) + m;
    const double var = fmax(0.0, sums.y / double(count) - m * m);
    const float invstd = float(1.0 / sqrt(var + double(epsilon)));
    save_mean[c] = float(mean);
    save_invstd[c] = invstd;
    const float unbias = count > 1 ? float(count) / float(count - 1) : 1.0f;
    if (running_mean != nullptr)
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * float(mean);
    if (running_var != nullptr)
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * float(var) * unbias;
    coef[c] = make_float4(scale[c] * invstd, float(mean), shift[c], 0.0f);
}

// The backward's dshift = sum(dy) and dscale = invstd sum(dy (x - mean)), and the
// coefficients of dx = a dy + kx (x - mean) + b with a = scale invstd,
// kx = -a invstd^2 sum(dy (x - mean)) / M, b = -a sum(dy) / M (M elements per channel).
__global__ void __launch_bounds__(kFinishX * kFinishY)
finish_backward_kernel(BnShape g, int64_t parts, const double2 *part, const float *scale,
                       const float *save_mean, const float *save_invstd, float *dscale,
                       float *dshift, float4 *coef)
{
    const int64_t c = blockIdx.x * int64_t(kFinishX) + threadIdx.x;
    const double2 sums = channel_total(g, parts, part, c);
    if (threadIdx.y != 0 || c >= g.channels)
        return;
    const double count = double(g.n * g.spatial), invstd = save_invstd[c];
    dshift[c] = float(sums.x);
    dscale[c] = float(sums.y * invstd);
    const double a = double(scale[c]) * invstd;
    coef[c] = make_float4(float(a), save_mean[c], float(-a * invstd * invstd * sums.y / count),
                          float(-a * sums.x / count));
}

// Inference: y = scale / sqrt(running_var + epsilon) (x - running_mean) + shift.
__global__ void inference_coefficients_kernel(int64_t channels, const float *scale,
                                              const float *shift, const float *running_mean,
                                              const float *running_var, float epsilon,
                                              float4 *coef)
{
    for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < channels;
         c += int64_t(gridDim.x) * blockDim.x)
        coef[c] = make_float4(scale[c] / sqrtf(running_var[c] + epsilon), running_mean[c],
                              shift[c], 0.0f);
}

// out = the element-wise pass (apply) over every element, planes then rows; dy is read
// by the backward only, or is the shortcut z with Add.
template <typename T, int V, bool Grad, bool Relu, bool Add>
__global__ void __launch_bounds__(kThreads)
planes_apply_kernel(BnShape g, const float4 *coef, const T *x, const T *dy, const T *mask,
                    T *out)
{
    const int64_t c = blockIdx.x, packs = g.spatial / V;
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    const float4 k = coef[c];
    const float fill[V] = {};
    for (int64_t n0 = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; n0 < g.n;
         n0 += kUnroll * step) {
        for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
            int64_t at[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t n = n0 + u * step;
                at[u] = n < g.n ? (n * g.channels + c) * g.spatial + i * V : -1;
            }
            float xv[kUnroll][V], gv[kUnroll][V];
            load_batch<V, Grad, Relu, Add>(x, dy, mask, at, fill, xv, gv);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if (at[u] < 0)
                    continue;
                float ov[V];
#pragma unroll
                for (int j = 0; j < V; ++j)
                    ov[j] = apply<Grad, Relu, Add, T>(k, xv[u][j], gv[u][j]);
                store_pack<V>(out, at[u], ov);
            }
        }
    }
}

template <typename T, int V, bool Grad, bool Relu, bool Add>
__global__ void __launch_bounds__(kThreads)
rows_apply_kernel(BnShape g, const float4 *coef, const T *x, const T *dy, const T *mask,
                  T *out)
{
    const int64_t c0 = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * V;
    if (c0 >= g.channels)
        return;
    float4 k[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
        k[j] = coef[c0 + j];
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    const float fill[V] = {};
    for (int64_t r0 = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r0 < g.n;
         r0 += kUnroll * step) {
        int64_t at[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t r = r0 + u * step;
            at[u] = r < g.n ? r * g.channels + c0 : -1;
        }
        float xv[kUnroll][V], gv[kUnroll][V];
        load_batch<V, Grad, Relu, Add>(x, dy, mask, at, fill, xv, gv);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (at[u] < 0)
                continue;
            float ov[V];
#pragma unroll
            for (int j = 0; j < V; ++j)
                ov[j] = apply<Grad, Relu, Add, T>(k[j], xv[u][j], gv[u][j]);
            store_pack<V>(out, at[u], ov);
        }
    }
}

// ---- host side: grids, scratch, launches -------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest power of two >= v within [lo, hi].
int pow2_at_least(int64_t v, int lo, int hi)
{
    int p = lo;
    while (p < hi && p < v)
        p *= 2;
    return p;
}

struct Plan {
    bool rows;
    int vec; // elements per access: 4 or 1
    dim3 block, sums_grid, apply_grid;
    int64_t parts() const { return sums_grid.y; }
};

// Grids that fill the GPU: the sums with about as many blocks as it holds at once, the
// element-wise pass with twice that (grid-stride loops do the rest); a part never has
// fewer than one row or plane per thread row. Planes are not split, so a few channels of
// few large planes (N * C far below the GPU's blocks) leave it partly idle; ResNet's
// smallest is 64 x 64 planes. vec4: 4 elements per access allowed by the pointers'
// alignment.
Plan plan_of(const BnShape &g, int sms, bool vec4)
{
    Plan p{};
    p.rows = g.spatial == 1;
    const int64_t extent = p.rows ? g.channels : g.spatial; // contiguous elements
    p.vec = vec4 && extent % 4 == 0 ? 4 : 1;
    const int64_t packs = extent / p.vec;
    const int tx = p.rows ? pow2_at_least(packs, 1, 32) : pow2_at_least(packs, 32, kThreads);
    const int ty = kThreads / tx;
    const int64_t across = p.rows ? ceil_div(packs, tx) : g.channels; // grid x
    const int64_t down = ceil_div(g.n, ty); // row or plane groups of one block
    const int64_t resident = int64_t(std::max(sms, 1)) * (2048 / kThreads);
    auto split = [&](int64_t blocks, int64_t cap) {
        return unsigned(std::clamp(ceil_div(blocks, across), int64_t(1), std::min(down, cap)));
    };
    p.block = dim3(unsigned(tx), unsigned(ty));
    p.sums_grid = dim3(unsigned(across), split(resident, kMaxParts));
    p.apply_grid = dim3(unsigned(across), split(2 * resident, kMaxGridY));
    return p;
}

// The scratch: C coefficients (float4), then parts x C sums (double2).
struct Scratch {
    float4 *coef;
    double2 *parts;
};

Scratch carve(void *scratch, const BnShape &g)
{
    auto *coef = static_cast<float4 *>(scratch);
    return {coef, reinterpret_cast<double2 *>(coef + g.channels)};
}

// Whether every pointer is aligned to 4 elements of dtype.
bool aligned4(int dtype, std::initializer_list<const void *> pointers)
{
    const uintptr_t bytes = dtype == kDtypeF32 ? 16 : 8;
    for (const void *p : pointers)
        if (reinterpret_cast<uintptr_t>(p) % bytes != 0)
            return false;
    return true;
}

template <typename F>
int with_vec(int vec, F &&f)
{
    return vec == 4 ? f(std::integral_constant<int, 4>{}) : f(std::integral_constant<int, 1>{});
}

template <typename T, int V, bool Grad, bool Relu>
int launch_sums(const Plan &p, stream_t s, const BnShape &g, const T *x, const T *dy,
                const T *mask, const float *mean, double2 *parts)
{
    if (p.rows)
        rows_sums_kernel<T, V, Grad, Relu>
            <<<p.sums_grid, p.block, 0, s>>>(g, x, dy, mask, mean, parts);
    else
        planes_sums_kernel<T, V, Grad, Relu>
            <<<p.sums_grid, p.block, 0, s>>>(g, x, dy, mask, mean, parts);
    return last_launch_error();
}

template <typename T, int V, bool Grad, bool Relu, bool Add = false>
int launch_apply(const Plan &p, stream_t s, const BnShape &g, const float4 *coef, const T *x,
                 const T *dy, const T *mask, T *out)
{
    if (p.rows)
        rows_apply_kernel<T, V, Grad, Relu, Add>
            <<<p.apply_grid, p.block, 0, s>>>(g, coef, x, dy, mask, out);
    else
        planes_apply_kernel<T, V, Grad, Relu, Add>
            <<<p.apply_grid, p.block, 0, s>>>(g, coef, x, dy, mask, out);
    return last_launch_error();
}

// Calls f(std::bool_constant<relu>{}): the fused kernels are other instances.
template <typename F>
int with_relu(bool relu, F &&f)
{
    return relu ? f(std::true_type{}) : f(std::false_type{});
}

// The forward's element-wise pass: plain, ReLU fused, or the shortcut z added before it.
template <typename T, int V>
int launch_forward_apply(const Plan &p, stream_t s, const BnShape &g, const float4 *coef,
                         const T *x, const T *z, bool relu, T *y)
{
    if (z != nullptr)
        return launch_apply<T, V, false, true, true>(p, s, g, coef, x, z, nullptr, y);
    return with_relu(relu, [&](auto fused) {
        return launch_apply<T, V, false, decltype(fused)::value>(p, s, g, coef, x, nullptr,
                                                                nullptr, y);
    });
}

dim3 finish_grid(const BnShape &g) { return dim3(unsigned(ceil_div(g.channels, kFinishX))); }
const dim3 kFinishBlock(kFinishX, kFinishY);

} // namespace

size_t bn_scratch_bytes(const BnShape &g, int sms)
{
    const int64_t parts =
        std::max(plan_of(g, sms, true).parts(), plan_of(g, sms, false).parts());
    return size_t(g.channels) * (sizeof(float4) + size_t(parts) * sizeof(double2));
}

int launch_bn_forward_training(const BnLaunch &l, const BnShape &g, const void *x,
                               const void *z, const float *scale, const float *shift,
                               float epsilon, float momentum, void *y, float *save_mean,
                               float *save_invstd, float *running_mean, float *running_var,
                               bool relu)
{
    const Plan p = plan_of(g, l.sms, aligned4(g.dtype, {x, y, z}));
    const Scratch s = carve(l.scratch, g);
    return by_dtype(g.dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const auto *xt = static_cast<const T *>(x);
        return with_vec(p.vec, [&](auto vec) {
            constexpr int V = decltype(vec)::value;
            int rc = launch_sums<T, V, false, false>(p, l.stream, g, xt, nullptr, nullptr,
                                                     nullptr, s.parts);
            if (rc != 0)
                return rc;
            finish_forward_kernel<T><<<finish_grid(g), kFinishBlock, 0, l.stream>>>(
                g, p.parts(), s.parts, xt, scale, shift, epsilon, momentum, save_mean,
                save_invstd, running_mean, running_var, s.coef);
            if (int rc = last_launch_error())
                return rc;
            return launch_forward_apply<T, V>(p, l.stream, g, s.coef, xt,
                                              static_cast<const T *>(z), relu,
                                              static_cast<T *>(y));
        });
    });
}

int launch_bn_forward_inference(const BnLaunch &l, const BnShape &g, const void *x,
                                const void *z, const float *scale, const float *shift,
                                const float *running_mean, const float *running_var,
                                float epsilon, void *y, bool relu)
{
    const Plan p = plan_of(g, l.sms, aligned4(g.dtype, {x, y, z}));
    const Scratch s = carve(l.scratch, g);
    return by_dtype(g.dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        return with_vec(p.vec, [&](auto vec) {
            constexpr int V = decltype(vec)::value;
            inference_coefficients_kernel<<<unsigned(ceil_div(g.channels, kThreads)), kThreads,
                                            0, l.stream>>>(g.channels, scale, shift,
                                                           running_mean, running_var, epsilon,
                                                           s.coef);
            if (int rc = last_launch_error())
                return rc;
            return launch_forward_apply<T, V>(p, l.stream, g, s.coef,
                                              static_cast<const T *>(x),
                                              static_cast<const T *>(z), relu,
                                              static_cast<T *>(y));
        });
    });
}

int launch_bn_backward(const BnLaunch &l, const BnShape &g, const void *x, const void *dy,
                       const void *relu_y, const float *scale, const float *save_mean,
                       const float *save_invstd, void *dx, float *dscale, float *dshift)
{
    const Plan p = relu_y != nullptr ? plan_of(g, l.sms, aligned4(g.dtype, {x, dy, relu_y, dx}))
                                     : plan_of(g, l.sms, aligned4(g.dtype, {x, dy, dx}));
    const Scratch s = carve(l.scratch, g);
    return by_dtype(g.dtype, [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const auto *xt = static_cast<const T *>(x);
        const auto *dyt = static_cast<const T *>(dy);
        const auto *mt = static_cast<const T *>(relu_y);
        return with_vec(p.vec, [&](auto vec) {
            constexpr int V = decltype(vec)::value;
            return with_relu(relu_y != nullptr, [&](auto fused) {
                constexpr bool R = decltype(fused)::value;
                if (int rc = launch_sums<T, V, true, R>(p, l.stream, g, xt, dyt, mt, save_mean,
                                                         s.parts))
                    return rc;
                finish_backward_kernel<<<finish_grid(g), kFinishBlock, 0, l.stream>>>(
                    g, p.parts(), s.parts, scale, save_mean, save_invstd, dscale, dshift,
                    s.coef);
                if (int rc = last_launch_error())
                    return rc;
                return launch_apply<T, V, true, R>(p, l.stream, g, s.coef, xt, dyt, mt,
                                                   static_cast<T *>(dx));
            });
        });
    });
}

} // namespace dtp::cudnn

/* SPDX-License-Identifier: Apache-2.0 */
// What the CUDA kernels of the cuDNN plugin share (cudnn_kernels.cu, cudnn_bn_kernels.cu):
// the dtype codes of compute.h, conversions of every float type to and from float (each
// kernel computes in float, so one template serves f32, f16 and bf16), and the host-side
// dispatch on a dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dtp::cudnn {

// DTP_FLOAT32, DTP_FLOAT16, DTP_BFLOAT16 and DTP_INT32 of compute.h.
constexpr int kDtypeF32 = 0, kDtypeF16 = 2, kDtypeBF16 = 3, kDtypeI32 = 6;

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__device__ inline float load(const T *p, int64_t i) { return to_float(p[i]); }
template <typename T>
__device__ inline void store(T *p, int64_t i, float v) { p[i] = from_float<T>(v); }

// Calls f(static_cast<T *>(nullptr)) with T the element type of dtype (float, __half,
// __nv_bfloat16) and returns its result; cudaErrorInvalidValue for any other dtype.
template <typename F>
int by_dtype(int dtype, F &&f)
{
    switch (dtype) {
    case kDtypeF32: return f(static_cast<float *>(nullptr));
    case kDtypeF16: return f(static_cast<__half *>(nullptr));
    case kDtypeBF16: return f(static_cast<__nv_bfloat16 *>(nullptr));
    default: return static_cast<int>(cudaErrorInvalidValue);
    }
}

// The last launch's error, as the launch_* functions return it.
inline int last_launch_error() { return static_cast<int>(cudaGetLastError()); }

} // namespace dtp::cudnn

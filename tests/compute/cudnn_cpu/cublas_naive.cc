// SPDX-License-Identifier: Apache-2.0
// The cuBLAS of the cuDNN plugin built for the CPU: cublasGemmEx as its documented
// column-major product, C = alpha op(A) op(B) + beta C (beta 0: C not read), sums in
// double; float32, float16 and bfloat16 operands, and the compute types' rounding of the
// operands (CUBLAS_COMPUTE_32F_FAST_16BF to bfloat16, _FAST_TF32 to TF32).
#include <cublas_v2.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

struct cublasContext {
    cudaStream_t stream = nullptr;
};

namespace {

double load(cudaDataType_t type, const void *p, int64_t i)
{
    switch (type) {
    case CUDA_R_16F: return __half2float(static_cast<const __half *>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    default: return static_cast<const float *>(p)[i];
    }
}

void store(cudaDataType_t type, void *p, int64_t i, double v)
{
    switch (type) {
    case CUDA_R_16F: static_cast<__half *>(p)[i] = __float2half_rn(float(v)); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(float(v)); break;
    default: static_cast<float *>(p)[i] = float(v); break;
    }
}

// A float rounded to nearest even at `bits` mantissa bits (10: TF32, 7: bfloat16).
double round_mantissa(double v, int bits)
{
    float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return v; // inf, NaN
    const int drop = 23 - bits;
    const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
    u = (u + half - 1 + lsb) & ~((1u << drop) - 1);
    std::memcpy(&f, &u, 4);
    return f;
}

bool known(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    *handle = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void *, size_t)
{
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void *alpha, const void *a,
                            cudaDataType_t a_type, int lda, const void *b, cudaDataType_t b_type,
                            int ldb, const void *beta, void *c, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t)
{
    if (m < 0 || n < 0 || k < 0 || !known(a_type) || !known(b_type) || !known(c_type) ||
        ldc < std::max(1, m) || lda < std::max(1, transa == CUBLAS_OP_N ? m : k) ||
        ldb < std::max(1, transb == CUBLAS_OP_N ? k : n))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_16BF &&
        compute != CUBLAS_COMPUTE_32F_FAST_TF32)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const int bits = compute == CUBLAS_COMPUTE_32F_FAST_16BF ? 7
                     : compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? 10
                                                                : 23;
    auto operand = [&](double v) { return bits < 23 ? round_mantissa(v, bits) : v; };
    const double al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double sum = 0;
            for (int l = 0; l < k; ++l) {
                const int64_t ai =
                    transa == CUBLAS_OP_N ? i + int64_t(l) * lda : l + int64_t(i) * lda;
                const int64_t bi =
                    transb == CUBLAS_OP_N ? l + int64_t(j) * ldb : j + int64_t(l) * ldb;
                sum += operand(load(a_type, a, ai)) * operand(load(b_type, b, bi));
            }
            const int64_t ci = i + int64_t(j) * ldc;
            store(c_type, c, ci, be == 0 ? al * sum : al * sum + be * load(c_type, c, ci));
        }
    return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"

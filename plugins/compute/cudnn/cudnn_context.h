/* SPDX-License-Identifier: Apache-2.0 */
// The cuDNN compute plugin's instance: one GPU, its stream, the cuDNN and cuBLAS handles
// bound to that stream, a growable workspace and the descriptor cache.
//
// Stream semantics (compute.h): every op is queued on `stream` and returns; memcpy with a
// host side, softmax_xent_forward (it returns host values) and synchronize wait for it.
#pragma once

#include "cudnn_bn_choice.h"
#include "cudnn_cache.h"
#include "cudnn_profile.h"

#include <disttrain/plugin/compute.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace dtp::cudnn {

// A failed CUDA, cuDNN or cuBLAS call, or a request this plugin cannot serve.
struct Failure : std::runtime_error {
    Failure(int32_t status_, const std::string &message)
        : std::runtime_error(message), status(status_) {}
    int32_t status;
};

void check_cuda(cudaError_t rc, const char *what);
void check_cudnn(cudnnStatus_t rc, const char *what);
void check_cublas(cublasStatus_t rc, const char *what);

struct Instance {
    int device = 0;
    cudaStream_t stream = nullptr;
    cudnnHandle_t dnn = nullptr;
    cublasHandle_t blas = nullptr;
    bool bf16_native = false;
    bool bf16_compute = false;
    // float32 convolutions on tensor cores in TF32, as PyTorch's default
    // (torch.backends.cudnn.allow_tf32); DISTTRAIN_TF32=0 keeps them strict float32.
    bool tf32_convolutions = true;
    // This cuDNN refused batch norm on bfloat16 activations once: they go through float32
    // copies from then on (cudnn_batchnorm.cc).
    bool bn_bf16_refused = false;
    // DISTTRAIN_CUDNN_BATCHNORM, read when the instance starts (cudnn_batchnorm.cc).
    BatchnormKernels batchnorm = BatchnormKernels::automatic;
    int sm_count = 1; // the device's multiprocessors: the own kernels' grids
    std::string device_name;
    PrimitiveCache cache;
    void *host = nullptr;
    const dt_host_services_t *services = nullptr;
    void *workspace = nullptr;
    size_t workspace_bytes = 0;
    void *filter_workspace = nullptr;
    size_t filter_workspace_bytes = 0;
    void *blas_workspace = nullptr;
    cudaMemPool_t pool = nullptr; // where alloc takes tensors from, in stream order
    struct Ones {
        void *data = nullptr;
        size_t bytes = 0;
        int64_t count = 0;
    };
    std::map<int32_t, Ones> ones_by_dtype; // for sums over rows as products
    std::unique_ptr<Profile> profile; // DISTTRAIN_CUDNN_PROFILE=1 only

    explicit Instance(size_t capacity) : cache(capacity) {}
    ~Instance();
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;

    // Makes the instance's device current on the calling thread.
    void enter() const { check_cuda(cudaSetDevice(device), "cudaSetDevice"); }
    // At least bytes of device scratch, valid until the next call that asks for more.
    void *scratch(size_t bytes);
    // A second such buffer, for a channels-last convolution's filter in (K, R, S, C).
    void *filter_scratch(size_t bytes);
    // A device vector of at least count ones of dtype, kept for the instance's life.
    const void *ones(int32_t dtype, int64_t count);
};

cudnnDataType_t cudnn_type(int32_t dtype);

// A tensor descriptor for (N, C), (N, C, H, W) or any 1-4 dims (padded with 1s): NCHW,
// or with layout DTP_LAYOUT_NHWC a 4-D tensor whose memory is channels last (its dims
// still come in (N, C, H, W) order, as compute.h describes every activation).
struct TensorDesc {
    cudnnTensorDescriptor_t d = nullptr;
    TensorDesc() = default;
    explicit TensorDesc(const dtp_tensor_t &t, int32_t layout = DTP_LAYOUT_NCHW);
    TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t type,
               cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);
    ~TensorDesc();
    TensorDesc(TensorDesc &&o) noexcept : d(o.d) { o.d = nullptr; }
    TensorDesc &operator=(TensorDesc &&o) noexcept;
};

void report(void *c, const char *message);

template <typename F>
int32_t guarded(void *c, F &&body) noexcept
{
    try {
        static_cast<Instance *>(c)->enter();
        body();
        return DTP_OK;
    } catch (const Failure &e) {
        report(c, e.what());
        return e.status;
    } catch (const std::bad_alloc &) {
        report(c, "out of host memory");
        return DTP_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        report(c, e.what());
        return DTP_ERR_INTERNAL;
    }
}

inline int64_t count_of(const dtp_tensor_t &t)
{
    int64_t n = 1;
    for (int i = 0; i < t.ndims; ++i)
        n *= t.dims[i];
    return n;
}

std::string key_of(const dtp_tensor_t &t);

} // namespace dtp::cudnn

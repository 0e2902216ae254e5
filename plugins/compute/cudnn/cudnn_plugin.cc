// SPDX-License-Identifier: Apache-2.0
// libdt-compute-cudnn.so: the entry point, the instance on one GPU, memory, and the
// element-wise, loss and optimizer ops that run as this plugin's own kernels.
#include "cudnn_context.h"
#include "cudnn_kernels.h"
#include "cudnn_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace dtp::cudnn {

void check_cuda(cudaError_t rc, const char *what)
{
    if (rc != cudaSuccess)
        throw Failure(rc == cudaErrorMemoryAllocation ? DTP_ERR_NO_MEMORY : DTP_ERR_INTERNAL,
                      std::string(what) + ": " + cudaGetErrorString(rc));
}

void check_cudnn(cudnnStatus_t rc, const char *what)
{
    if (rc == CUDNN_STATUS_SUCCESS)
        return;
    const int32_t status = rc == CUDNN_STATUS_NOT_SUPPORTED ? DTP_ERR_UNSUPPORTED
                           : rc == CUDNN_STATUS_BAD_PARAM   ? DTP_ERR_INVALID_ARGUMENT
                           : rc == CUDNN_STATUS_ALLOC_FAILED ? DTP_ERR_NO_MEMORY
                                                              : DTP_ERR_INTERNAL;
    throw Failure(status, std::string(what) + ": " + cudnnGetErrorString(rc));
}

void check_cublas(cublasStatus_t rc, const char *what)
{
    if (rc == CUBLAS_STATUS_SUCCESS)
        return;
    const int32_t status = rc == CUBLAS_STATUS_NOT_SUPPORTED ? DTP_ERR_UNSUPPORTED
                           : rc == CUBLAS_STATUS_INVALID_VALUE ? DTP_ERR_INVALID_ARGUMENT
                           : rc == CUBLAS_STATUS_ALLOC_FAILED ? DTP_ERR_NO_MEMORY
                                                               : DTP_ERR_INTERNAL;
    throw Failure(status, std::string(what) + ": cuBLAS status " + std::to_string(rc));
}

void report(void *c, const char *message)
{
    const auto *in = static_cast<const Instance *>(c);
    if (in != nullptr && in->services != nullptr && in->services->set_error != nullptr)
        in->services->set_error(in->host, message);
}

Instance::~Instance()
{
    if (stream != nullptr)
        cudaStreamSynchronize(stream);
    cache = PrimitiveCache(1); // descriptors go before the handles
    if (workspace != nullptr)
        cudaFree(workspace);
    if (filter_workspace != nullptr)
        cudaFree(filter_workspace);
    if (blas_workspace != nullptr)
        cudaFree(blas_workspace);
    for (const auto &ones : ones_by_dtype)
        if (ones.second.data != nullptr)
            cudaFree(ones.second.data);
    if (pool != nullptr)
        cudaMemPoolDestroy(pool);
    if (blas != nullptr)
        cublasDestroy(blas);
    if (dnn != nullptr)
        cudnnDestroy(dnn);
    if (stream != nullptr)
        cudaStreamDestroy(stream);
}

namespace {

// At least bytes in buffer (grown with a wait for the stream, which may still use it).
void *grown(cudaStream_t stream, void *&buffer, size_t &have, size_t bytes)
{
    if (bytes > have) {
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        if (buffer != nullptr)
            check_cuda(cudaFree(buffer), "cudaFree");
        buffer = nullptr;
        have = 0;
        check_cuda(cudaMalloc(&buffer, bytes), "cudaMalloc (workspace)");
        have = bytes;
    }
    return buffer;
}

} // namespace

void *Instance::scratch(size_t bytes)
{
    return grown(stream, workspace, workspace_bytes, bytes);
}

void *Instance::filter_scratch(size_t bytes)
{
    return grown(stream, filter_workspace, filter_workspace_bytes, bytes);
}

const void *Instance::ones(int32_t dtype, int64_t count)
{
    Ones &o = ones_by_dtype[dtype];
    if (o.count < count) {
        const size_t element = dtype == DTP_FLOAT32 ? 4 : 2;
        grown(stream, o.data, o.bytes, element * size_t(count));
        check_cuda(static_cast<cudaError_t>(launch_fill(stream, dtype, count, o.data, 1.0f)),
                   "fill kernel (ones)");
        o.count = count;
    }
    return o.data;
}

cudnnDataType_t cudnn_type(int32_t dtype)
{
    switch (dtype) {
    case DTP_FLOAT32: return CUDNN_DATA_FLOAT;
    case DTP_FLOAT16: return CUDNN_DATA_HALF;
    case DTP_BFLOAT16: return CUDNN_DATA_BFLOAT16;
    default: throw Failure(DTP_ERR_UNSUPPORTED, "dtype " + std::to_string(dtype) +
                                                    " has no cuDNN type");
    }
}

TensorDesc::TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t type,
                       cudnnTensorFormat_t format)
{
    check_cudnn(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(d, format, type, int(n), int(c), int(h), int(w)),
                "cudnnSetTensor4dDescriptor");
}

TensorDesc::TensorDesc(const dtp_tensor_t &t, int32_t layout)
{
    if (layout == DTP_LAYOUT_NHWC && t.ndims == 4) { // dims stay (N, C, H, W): compute.h
        *this = TensorDesc(t.dims[0], t.dims[1], t.dims[2], t.dims[3], cudnn_type(t.dtype),
                           CUDNN_TENSOR_NHWC);
        return;
    }
    *this = TensorDesc(t.dims[0], t.ndims > 1 ? t.dims[1] : 1, t.ndims > 2 ? t.dims[2] : 1,
                       t.ndims > 3 ? t.dims[3] : 1, cudnn_type(t.dtype));
}

TensorDesc::~TensorDesc()
{
    if (d != nullptr)
        cudnnDestroyTensorDescriptor(d);
}

TensorDesc &TensorDesc::operator=(TensorDesc &&o) noexcept
{
    std::swap(d, o.d);
    return *this;
}

std::string key_of(const dtp_tensor_t &t)
{
    std::string out = std::to_string(t.dtype) + ":";
    for (int i = 0; i < t.ndims; ++i)
        out += std::to_string(t.dims[i]) + (i + 1 < t.ndims ? "x" : "");
    return out;
}

namespace {

Instance &self(void *c) { return *static_cast<Instance *>(c); }

void launched(int rc, const char *what) { check_cuda(static_cast<cudaError_t>(rc), what); }

// DISTTRAIN_TF32: 1 (default) lets float32 convolutions use TF32 tensor cores, as
// PyTorch does by default; 0 keeps every float32 operation strict. Anything else is an
// error naming the variable.
bool tf32_setting()
{
    const char *v = std::getenv("DISTTRAIN_TF32");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "1") == 0)
        return true;
    if (std::strcmp(v, "0") == 0)
        return false;
    throw Failure(DTP_ERR_INVALID_CONFIG, std::string("DISTTRAIN_TF32='") + v +
                  "' must be 1 (float32 convolutions in TF32, the default) or 0 (strict "
                  "float32)");
}

// DISTTRAIN_CUDNN_BATCHNORM (cudnn_bn_choice.h); a value it does not know is an error
// naming the variable and the accepted values.
BatchnormKernels batchnorm_setting()
{
    try {
        return batchnorm_kernels_setting(std::getenv("DISTTRAIN_CUDNN_BATCHNORM"));
    } catch (const std::invalid_argument &e) {
        throw Failure(DTP_ERR_INVALID_CONFIG, e.what());
    }
}

constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

// A memory pool of the device's own that keeps what is freed (no release threshold), so
// that steady-state steps allocate without the driver.
cudaMemPool_t make_pool(int device)
{
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    check_cuda(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
    uint64_t keep_all = UINT64_MAX;
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all),
               "cudaMemPoolSetAttribute");
    return pool;
}

int32_t init(const dt_compute_init_args_t *args, void **c)
{
    if (args == nullptr || c == nullptr || args->services == nullptr)
        return DTP_ERR_INVALID_ARGUMENT;
    auto fail = [&](int32_t status, const std::string &message) {
        if (args->services->set_error != nullptr)
            args->services->set_error(args->host, message.c_str());
        return status;
    };
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
        return fail(DTP_ERR_UNSUPPORTED,
                    std::string("no GPU: ") +
                        (rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device found") +
                        "; use DISTTRAIN_COMPUTE=onednn on this machine");
    const int device = args->device >= 0 ? args->device : (-args->device - 1) % count;
    if (device >= count)
        return fail(DTP_ERR_INVALID_ARGUMENT, "GPU " + std::to_string(device) +
                                                  " does not exist; this machine has " +
                                                  std::to_string(count));
    try {
        auto in = std::make_unique<Instance>(static_cast<size_t>(args->cache_capacity));
        in->host = args->host;
        in->services = args->services;
        in->device = device;
        in->enter();
        cudaDeviceProp prop{};
        check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
        in->device_name = std::string(prop.name) + " (GPU " + std::to_string(device) + ")";
        in->bf16_native = prop.major >= 8;
        in->bf16_compute = args->compute_dtype == DTP_BFLOAT16 && in->bf16_native;
        in->tf32_convolutions = tf32_setting() && prop.major >= 8;
        in->batchnorm = batchnorm_setting();
        in->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
        if (profile_requested())
            in->profile = std::make_unique<Profile>();
        check_cuda(cudaStreamCreateWithFlags(&in->stream, cudaStreamNonBlocking),
                   "cudaStreamCreate");
        check_cudnn(cudnnCreate(&in->dnn), "cudnnCreate");
        check_cudnn(cudnnSetStream(in->dnn, in->stream), "cudnnSetStream");
        check_cublas(cublasCreate(&in->blas), "cublasCreate");
        check_cublas(cublasSetStream(in->blas, in->stream), "cublasSetStream");
        // cuBLAS's workspace set once, as PyTorch does (32 MiB on Hopper), so that its
        // split-K kernels need no allocation of their own.
        check_cuda(cudaMalloc(&in->blas_workspace, kBlasWorkspaceBytes),
                   "cudaMalloc (cuBLAS workspace)");
        check_cublas(cublasSetWorkspace(in->blas, in->blas_workspace, kBlasWorkspaceBytes),
                     "cublasSetWorkspace");
        in->pool = make_pool(device);
        *c = in.release();
        return DTP_OK;
    } catch (const Failure &e) {
        return fail(e.status, e.what());
    } catch (const std::exception &e) {
        return fail(DTP_ERR_INTERNAL, e.what());
    }
}

int32_t finalize(void *c)
{
    std::unique_ptr<Instance> owned(static_cast<Instance *>(c));
    if (owned != nullptr) {
        cudaSetDevice(owned->device);
        if (owned->profile != nullptr)
            owned->profile->report(owned->device_name.c_str());
    }
    return DTP_OK;
}

int32_t info(void *c, dt_compute_info_t *out)
{
    const auto &in = self(c);
    dt_compute_info_t mine{};
    mine.struct_size = out->struct_size;
    mine.abi_version = out->abi_version;
    mine.device_kind = DTP_DEVICE_GPU;
    mine.threads = 1;
    mine.compute_dtype = in.bf16_compute ? DTP_BFLOAT16 : DTP_FLOAT32;
    mine.bf16_native = in.bf16_native ? 1 : 0;
    mine.device_name = in.device_name.c_str();
    mine.stream = in.stream;
    mine.memory_provider = "cuda"; // plugins/memory/cuda knows cudaMalloc'd memory
    mine.tf32_convolutions = in.tf32_convolutions && !in.bf16_compute ? 1 : 0;
    std::memcpy(out, &mine, std::min<size_t>(out->struct_size, sizeof(mine)));
    return DTP_OK;
}

int32_t synchronize(void *c)
{
    return guarded(c, [&] {
        auto &in = self(c);
        check_cuda(cudaStreamSynchronize(in.stream), "cudaStreamSynchronize");
        if (in.profile != nullptr)
            in.profile->mark();
    });
}

// Memory comes from the instance's stream-ordered pool: a step's temporaries are taken and
// given back in stream order without waiting for the GPU, and the pool keeps what it has
// for the next step. cudaMalloc and cudaFree each wait for the whole device, which drained
// the GPU's queue at every layer. Another stream may use the memory once it has waited
// for this stream's work up to the allocation (as collectives do through the producer's
// stream); free is ordered after this stream's work queued so far.
int32_t alloc(void *c, size_t bytes, void **out)
{
    return guarded(c, [&] {
        auto &in = self(c);
        cudaError_t rc = cudaMallocFromPoolAsync(out, bytes, in.pool, in.stream);
        if (rc == cudaErrorMemoryAllocation) { // the pool's cached blocks back to the device
            cudaGetLastError();
            check_cuda(cudaStreamSynchronize(in.stream), "cudaStreamSynchronize");
            check_cuda(cudaMemPoolTrimTo(in.pool, 0), "cudaMemPoolTrimTo");
            rc = cudaMallocFromPoolAsync(out, bytes, in.pool, in.stream);
        }
        check_cuda(rc, "cudaMallocFromPoolAsync");
    });
}

int32_t free_memory(void *c, void *ptr)
{
    return guarded(c, [&] { check_cuda(cudaFreeAsync(ptr, self(c).stream), "cudaFreeAsync"); });
}

int32_t copy(void *c, void *dst, const void *src, size_t bytes, int32_t kind)
{
    return guarded(c, [&] {
        auto &in = self(c);
        check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, in.stream),
                   "cudaMemcpyAsync");
        if (kind != DTP_COPY_DEVICE_TO_DEVICE)
            check_cuda(cudaStreamSynchronize(in.stream), "cudaStreamSynchronize");
    });
}

int32_t fill(void *c, const dtp_tensor_t *d, void *x, float value)
{
    return guarded(c, [&] {
        launched(launch_fill(self(c).stream, d->dtype, count_of(*d), x, value), "fill kernel");
    });
}

int32_t cast(void *c, const dtp_tensor_t *d, const void *src, int32_t dst_dtype, void *dst)
{
    return guarded(c, [&] {
        launched(launch_cast(self(c).stream, d->dtype, dst_dtype, count_of(*d), src, dst),
                 "cast kernel");
    });
}

int32_t add(void *c, const dtp_tensor_t *d, const void *a, const void *b, void *out)
{
    return guarded(c, [&] {
        launched(launch_add(self(c).stream, d->dtype, count_of(*d), a, b, out), "add kernel");
    });
}

int32_t add_relu(void *c, const dtp_tensor_t *d, const void *a, const void *b, void *out)
{
    return guarded(c, [&] {
        launched(launch_add_relu(self(c).stream, d->dtype, count_of(*d), a, b, out),
                 "add+relu kernel");
    });
}

int32_t axpby(void *c, const dtp_tensor_t *d, float alpha, const void *x, float beta, void *y)
{
    return guarded(c, [&] {
        launched(launch_axpby(self(c).stream, d->dtype, count_of(*d), alpha, x, beta, y),
                 "axpby kernel");
    });
}

int32_t scale(void *c, const dtp_tensor_t *d, float alpha, void *x)
{
    return guarded(c, [&] {
        launched(launch_axpby(self(c).stream, d->dtype, count_of(*d), alpha, x, 0.0f, x),
                 "scale kernel");
    });
}

int32_t bias_add(void *c, const dtp_tensor_t *d, void *y, const float *bias)
{
    return guarded(c, [&] {
        const int64_t sp = d->ndims == 4 ? d->dims[2] * d->dims[3] : 1;
        launched(launch_bias_add(self(c).stream, d->dtype, d->dims[0], d->dims[1], sp, y, bias),
                 "bias kernel");
    });
}

int32_t relu_forward(void *c, const dtp_tensor_t *d, const void *x, void *y)
{
    return guarded(c, [&] {
        launched(launch_relu(self(c).stream, d->dtype, count_of(*d), x, y), "relu kernel");
    });
}

int32_t relu_backward(void *c, const dtp_tensor_t *d, const void *x, const void *dy, void *dx)
{
    return guarded(c, [&] {
        launched(launch_relu_backward(self(c).stream, d->dtype, count_of(*d), x, dy, dx),
                 "relu backward kernel");
    });
}

int32_t relu_backward_sum(void *c, const dtp_tensor_t *d, const void *y, const void *a,
                          const void *b, void *dx)
{
    return guarded(c, [&] {
        launched(launch_relu_backward_sum(self(c).stream, d->dtype, count_of(*d), y, a, b, dx),
                 "relu backward of a sum kernel");
    });
}

// The kernel only flags a bad label; on that error path the labels come to the host so
// that the message names the first one, as the CPU plugin's does.
std::string bad_label_message(Instance &in, const int32_t *labels, int64_t rows, int64_t k)
{
    std::vector<int32_t> host(static_cast<size_t>(rows));
    check_cuda(cudaMemcpyAsync(host.data(), labels, host.size() * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, in.stream),
               "cudaMemcpyAsync (labels)");
    check_cuda(cudaStreamSynchronize(in.stream), "cudaStreamSynchronize");
    for (int64_t r = 0; r < rows; ++r)
        if (host[size_t(r)] < 0 || host[size_t(r)] >= k)
            return "labels[" + std::to_string(r) + "] = " + std::to_string(host[size_t(r)]) +
                   " is not a class in [0, " + std::to_string(k) + ")";
    return "a label is not a class in [0, " + std::to_string(k) + ")";
}

int32_t softmax_xent_forward(void *c, const dtp_tensor_t *d, const void *logits,
                             const int32_t *labels, void *probs, float *loss, int64_t *correct)
{
    return guarded(c, [&] {
        auto &in = self(c);
        const int64_t rows = d->dims[0], k = d->dims[1];
        // Scratch: per-row loss, per-row hit, one flag for a bad label.
        auto *base = static_cast<char *>(in.scratch(size_t(rows) * 8 + 16));
        auto *row_loss = reinterpret_cast<float *>(base);
        auto *row_hit = reinterpret_cast<int32_t *>(base + rows * 4);
        auto *bad = reinterpret_cast<int32_t *>(base + rows * 8);
        check_cuda(cudaMemsetAsync(bad, 0, 4, in.stream), "cudaMemsetAsync");
        launched(launch_softmax_xent(in.stream, rows, k, static_cast<const float *>(logits),
                                     labels, static_cast<float *>(probs), row_loss, row_hit, bad),
                 "softmax cross-entropy kernel");
        std::vector<char> host(size_t(rows) * 8 + 4);
        check_cuda(cudaMemcpyAsync(host.data(), base, host.size(), cudaMemcpyDeviceToHost,
                                   in.stream),
                   "cudaMemcpyAsync");
        check_cuda(cudaStreamSynchronize(in.stream), "cudaStreamSynchronize");
        int32_t bad_label;
        std::memcpy(&bad_label, host.data() + rows * 8, 4);
        if (bad_label)
            throw Failure(DTP_ERR_INVALID_ARGUMENT, bad_label_message(in, labels, rows, k));
        double total = 0;
        int64_t hits = 0;
        for (int64_t r = 0; r < rows; ++r) {
            float l;
            int32_t h;
            std::memcpy(&l, host.data() + r * 4, 4);
            std::memcpy(&h, host.data() + rows * 4 + r * 4, 4);
            total += l;
            hits += h;
        }
        *loss = static_cast<float>(total / double(rows));
        if (correct != nullptr)
            *correct = hits;
    });
}

int32_t softmax_xent_backward(void *c, const dtp_tensor_t *d, const void *probs,
                              const int32_t *labels, float scale_, void *dlogits)
{
    return guarded(c, [&] {
        launched(launch_softmax_xent_backward(self(c).stream, d->dims[0], d->dims[1],
                                              static_cast<const float *>(probs), labels, scale_,
                                              static_cast<float *>(dlogits)),
                 "softmax cross-entropy backward kernel");
    });
}

int32_t sgd_update(void *c, const dtp_sgd_t *p, size_t count, float *w, const float *g,
                   float *buf)
{
    return guarded(c, [&] {
        launched(launch_sgd(self(c).stream, int64_t(count), p->lr, p->momentum, p->weight_decay,
                            p->nesterov, w, g, buf),
                 "sgd kernel");
    });
}

int32_t adam_update(void *c, const dtp_adam_t *p, size_t count, float *w, const float *g,
                    float *m, float *v)
{
    return guarded(c, [&] {
        const double t = double(p->step);
        const float c1 = float(1.0 - std::pow(double(p->beta1), t));
        const float root_c2 = std::sqrt(float(1.0 - std::pow(double(p->beta2), t)));
        launched(launch_adam(self(c).stream, int64_t(count), p->lr, p->beta1, p->beta2,
                             p->epsilon, p->weight_decay, p->decoupled, c1, root_c2, w, g, m, v),
                 "adam kernel");
    });
}

// An op of the table, timed into the instance's profile when it has one.
template <auto Fn, int Op>
struct Timed;
template <typename... A, int32_t (*Fn)(void *, A...), int Op>
struct Timed<Fn, Op> {
    static int32_t call(void *c, A... a)
    {
        const auto *in = static_cast<const Instance *>(c);
        ProfileScope scope(in != nullptr ? in->profile.get() : nullptr, Op,
                           in != nullptr ? in->stream : nullptr);
        return Fn(c, a...);
    }
};

const dt_compute_v1_t kOps = {
    sizeof(dt_compute_v1_t), DT_COMPUTE_VERSION_2, "cudnn",
    init, finalize, info,
    Timed<synchronize, kOpSynchronize>::call,
    Timed<alloc, kOpAlloc>::call,
    Timed<free_memory, kOpFree>::call,
    Timed<copy, kOpMemcpy>::call,
    Timed<fill, kOpFill>::call,
    Timed<cast, kOpCast>::call,
    Timed<matmul, kOpMatmul>::call,
    Timed<add, kOpAdd>::call,
    Timed<axpby, kOpAxpby>::call,
    Timed<scale, kOpScale>::call,
    Timed<bias_add, kOpBiasAdd>::call,
    Timed<bias_backward, kOpBiasBackward>::call,
    Timed<relu_forward, kOpReluForward>::call,
    Timed<relu_backward, kOpReluBackward>::call,
    Timed<conv_forward, kOpConvForward>::call,
    Timed<conv_backward_data, kOpConvBackwardData>::call,
    Timed<conv_backward_weights, kOpConvBackwardWeights>::call,
    Timed<pool_workspace_size, kOpPoolWorkspaceSize>::call,
    Timed<pool_forward, kOpPoolForward>::call,
    Timed<pool_backward, kOpPoolBackward>::call,
    Timed<batchnorm_forward_training, kOpBatchnormForwardTraining>::call,
    Timed<batchnorm_forward_inference, kOpBatchnormForwardInference>::call,
    Timed<batchnorm_backward, kOpBatchnormBackward>::call,
    Timed<softmax_xent_forward, kOpSoftmaxXentForward>::call,
    Timed<softmax_xent_backward, kOpSoftmaxXentBackward>::call,
    Timed<sgd_update, kOpSgdUpdate>::call,
    Timed<adam_update, kOpAdamUpdate>::call,
    Timed<batchnorm_relu_forward_training, kOpBatchnormReluForwardTraining>::call,
    Timed<batchnorm_relu_forward_inference, kOpBatchnormReluForwardInference>::call,
    Timed<batchnorm_relu_backward, kOpBatchnormReluBackward>::call,
    Timed<add_relu, kOpAddRelu>::call,
    Timed<relu_backward_sum, kOpReluBackwardSum>::call,
    Timed<batchnorm_add_relu_forward_training, kOpBatchnormAddReluForwardTraining>::call,
    Timed<batchnorm_add_relu_forward_inference, kOpBatchnormAddReluForwardInference>::call,
};

} // namespace

} // namespace dtp::cudnn

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer)
{
    if (offer == nullptr || answer == nullptr)
        return DTP_ERR_INVALID_ARGUMENT;
    // Versions 1 and 2 share the table; 2 (layouts, bfloat16 activations with float32
    // weights) wherever the core speaks it.
    if (offer->min_ops_version > DT_COMPUTE_VERSION_2 ||
        offer->max_ops_version < DT_COMPUTE_VERSION_1) {
        answer->decline_reason = "this plugin speaks compute ops versions 1 and 2 only";
        return DTP_ERR_UNSUPPORTED;
    }
    answer->kind = DT_PLUGIN_KIND_COMPUTE;
    answer->ops_version = offer->max_ops_version >= DT_COMPUTE_VERSION_2 ? DT_COMPUTE_VERSION_2
                                                                         : DT_COMPUTE_VERSION_1;
    answer->name = "cudnn";
    answer->ops = &dtp::cudnn::kOps;
    return DTP_OK;
}

// SPDX-License-Identifier: Apache-2.0
// The operations cuDNN and cuBLAS run: matmul (cublasGemmEx), convolution with algorithms
// chosen once per shape by measurement, and pooling (batch norm: cudnn_batchnorm.cc).
#include "cudnn_context.h"
#include "cudnn_kernels.h"
#include "cudnn_ops.h"

namespace dtp::cudnn {

namespace {

Instance &self(void *c) { return *static_cast<Instance *>(c); }

cudaDataType_t blas_type(int32_t dtype)
{
    switch (dtype) {
    case DTP_FLOAT32: return CUDA_R_32F;
    case DTP_FLOAT16: return CUDA_R_16F;
    case DTP_BFLOAT16: return CUDA_R_16BF;
    default: throw Failure(DTP_ERR_UNSUPPORTED, "dtype has no cuBLAS type");
    }
}

// The fastest algorithm that succeeded in find's measurement (its results come sorted by
// time), or heuristics' first where the measurement itself fails (e.g. no memory for its
// trial buffers). Every candidate is measured once per shape: the primitive cache keeps
// the choice with the descriptors.
template <typename Perf, typename Find, typename Heuristic>
auto choose(Find &&find, Heuristic &&heuristic, const char *what) -> decltype(Perf{}.algo)
{
    constexpr int kCandidates = 8;
    Perf perf[kCandidates];
    int found = 0;
    if (find(kCandidates, &found, perf) == CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < found; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS)
                return perf[i].algo;
    check_cudnn(heuristic(kCandidates, &found, perf),
                (std::string("cuDNN's heuristics for the convolution's ") + what).c_str());
    return perf[0].algo;
}

// Descriptors of one convolution and the algorithms cuDNN picked for it.
struct ConvEntry : CacheEntry {
    TensorDesc x, y, bias;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnConvolutionFwdAlgo_t fwd{};
    cudnnConvolutionBwdDataAlgo_t bwd_data{};
    cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
    size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;
    ~ConvEntry() override
    {
        if (w != nullptr)
            cudnnDestroyFilterDescriptor(w);
        if (conv != nullptr)
            cudnnDestroyConvolutionDescriptor(conv);
    }
};

const char *dtype_label(int32_t dtype)
{
    switch (dtype) {
    case DTP_FLOAT32: return "float32";
    case DTP_BFLOAT16: return "bfloat16";
    case DTP_FLOAT16: return "float16";
    default: return "another dtype";
    }
}

std::string layout_key(int32_t layout)
{
    switch (layout) {
    case DTP_LAYOUT_NCHW: return "nchw";
    case DTP_LAYOUT_NHWC: return "nhwc";
    default:
        throw Failure(DTP_ERR_UNSUPPORTED, "the cudnn plugin knows the NCHW and NHWC layouts, "
                                           "not layout " + std::to_string(layout));
    }
}

ConvEntry &conv_entry(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &x,
                      const dtp_tensor_t &w, const dtp_tensor_t &y)
{
    // bfloat16 activations with float32 weights (compute.h's mixed precision): the filter
    // descriptor is the activations' dtype, and filter_for converts the weights to it.
    if (w.dtype != x.dtype && !(x.dtype == DTP_BFLOAT16 && w.dtype == DTP_FLOAT32))
        throw Failure(DTP_ERR_UNSUPPORTED,
                      std::string("the cudnn plugin convolves ") + dtype_label(x.dtype) +
                          " activations with weights of their dtype (or float32 weights with "
                          "bfloat16 activations), not with " + dtype_label(w.dtype));
    const std::string key = "conv|" + layout_key(p.layout) + "|" + key_of(x) + "|" +
                            key_of(w) + "|" +
                            std::to_string(p.stride[0]) + "," + std::to_string(p.stride[1]) +
                            "," + std::to_string(p.padding[0]) + "," +
                            std::to_string(p.padding[1]) + "," + std::to_string(p.dilation[0]) +
                            "," + std::to_string(p.dilation[1]) + "," + std::to_string(p.groups);
    return in.cache.get<ConvEntry>(key, [&] {
        auto e = std::make_unique<ConvEntry>();
        const cudnnDataType_t type = cudnn_type(x.dtype);
        e->x = TensorDesc(x, p.layout);
        e->y = TensorDesc(y, p.layout);
        e->bias = TensorDesc(1, w.dims[0], 1, 1, CUDNN_DATA_FLOAT);
        // Channels-last activations take a channels-last filter, (K, R, S, C), which
        // the calls below make from the caller's (K, C, R, S) weights.
        const cudnnTensorFormat_t filter_format =
            p.layout == DTP_LAYOUT_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        check_cudnn(cudnnCreateFilterDescriptor(&e->w), "cudnnCreateFilterDescriptor");
        check_cudnn(cudnnSetFilter4dDescriptor(e->w, type, filter_format, int(w.dims[0]),
                                               int(w.dims[1]), int(w.dims[2]), int(w.dims[3])),
                    "cudnnSetFilter4dDescriptor");
        check_cudnn(cudnnCreateConvolutionDescriptor(&e->conv), "cudnnCreateConvolutionDescriptor");
        check_cudnn(cudnnSetConvolution2dDescriptor(e->conv, p.padding[0], p.padding[1],
                                                    p.stride[0], p.stride[1], p.dilation[0],
                                                    p.dilation[1], CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_FLOAT),
                    "cudnnSetConvolution2dDescriptor");
        check_cudnn(cudnnSetConvolutionGroupCount(e->conv, p.groups),
                    "cudnnSetConvolutionGroupCount");
        // Math: bf16 compute (and non-float32 data) on tensor cores with conversion;
        // float32 in TF32 on tensor cores unless DISTTRAIN_TF32=0 (strict FMA).
        const bool convert = x.dtype != DTP_FLOAT32 || in.bf16_compute;
        const cudnnMathType_t math = convert                ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                     : in.tf32_convolutions ? CUDNN_TENSOR_OP_MATH
                                                            : CUDNN_FMA_MATH;
        check_cudnn(cudnnSetConvolutionMathType(e->conv, math), "cudnnSetConvolutionMathType");
        // Algorithms by measurement, once per shape (the primitive cache keeps them), as
        // PyTorch's cudnn.benchmark does; cuDNN's heuristics where a measurement fails.
        e->fwd = choose<cudnnConvolutionFwdAlgoPerf_t>(
            [&](int n, int *found, cudnnConvolutionFwdAlgoPerf_t *perf) {
                return cudnnFindConvolutionForwardAlgorithm(in.dnn, e->x.d, e->w, e->conv,
                                                            e->y.d, n, found, perf);
            },
            [&](int n, int *found, cudnnConvolutionFwdAlgoPerf_t *perf) {
                return cudnnGetConvolutionForwardAlgorithm_v7(in.dnn, e->x.d, e->w, e->conv,
                                                              e->y.d, n, found, perf);
            },
            "forward");
        check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(in.dnn, e->x.d, e->w, e->conv, e->y.d,
                                                            e->fwd, &e->fwd_bytes),
                    "cudnnGetConvolutionForwardWorkspaceSize");
        e->bwd_data = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
            [&](int n, int *found, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
                return cudnnFindConvolutionBackwardDataAlgorithm(in.dnn, e->w, e->y.d, e->conv,
                                                                 e->x.d, n, found, perf);
            },
            [&](int n, int *found, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(in.dnn, e->w, e->y.d,
                                                                   e->conv, e->x.d, n, found,
                                                                   perf);
            },
            "backward data");
        check_cudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(in.dnn, e->w, e->y.d, e->conv,
                                                                 e->x.d, e->bwd_data,
                                                                 &e->data_bytes),
                    "cudnnGetConvolutionBackwardDataWorkspaceSize");
        e->bwd_filter = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
            [&](int n, int *found, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
                return cudnnFindConvolutionBackwardFilterAlgorithm(in.dnn, e->x.d, e->y.d,
                                                                   e->conv, e->w, n, found,
                                                                   perf);
            },
            [&](int n, int *found, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
                return cudnnGetConvolutionBackwardFilterAlgorithm_v7(in.dnn, e->x.d, e->y.d,
                                                                     e->conv, e->w, n, found,
                                                                     perf);
            },
            "backward filter");
        check_cudnn(cudnnGetConvolutionBackwardFilterWorkspaceSize(in.dnn, e->x.d, e->y.d,
                                                                   e->conv, e->w, e->bwd_filter,
                                                                   &e->filter_bytes),
                    "cudnnGetConvolutionBackwardFilterWorkspaceSize");
        return e;
    });
}

struct PoolEntry : CacheEntry {
    TensorDesc x, y;
    cudnnPoolingDescriptor_t pool = nullptr;
    ~PoolEntry() override
    {
        if (pool != nullptr)
            cudnnDestroyPoolingDescriptor(pool);
    }
};

PoolEntry &pool_entry(Instance &in, const dtp_pool_t &p, const dtp_tensor_t &x,
                      const dtp_tensor_t &y)
{
    const std::string key = "pool|" + layout_key(p.layout) + "|" + key_of(x) + "|" +
                            std::to_string(p.kind) + "|" +
                            std::to_string(p.kernel[0]) + "," + std::to_string(p.kernel[1]) +
                            "," + std::to_string(p.stride[0]) + "," +
                            std::to_string(p.stride[1]) + "," + std::to_string(p.padding[0]) +
                            "," + std::to_string(p.padding[1]);
    return in.cache.get<PoolEntry>(key, [&] {
        auto e = std::make_unique<PoolEntry>();
        e->x = TensorDesc(x, p.layout);
        e->y = TensorDesc(y, p.layout);
        const cudnnPoolingMode_t mode =
            p.kind == DTP_POOL_MAX ? CUDNN_POOLING_MAX
            : p.kind == DTP_POOL_AVG_INCLUDE_PADDING ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                     : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        check_cudnn(cudnnCreatePoolingDescriptor(&e->pool), "cudnnCreatePoolingDescriptor");
        check_cudnn(cudnnSetPooling2dDescriptor(e->pool, mode, CUDNN_NOT_PROPAGATE_NAN,
                                                p.kernel[0], p.kernel[1], p.padding[0],
                                                p.padding[1], p.stride[0], p.stride[1]),
                    "cudnnSetPooling2dDescriptor");
        return e;
    });
}

const float kOne = 1.0f, kZero = 0.0f;

bool channels_last(const dtp_conv_t &p) { return p.layout == DTP_LAYOUT_NHWC; }

// A filter of w's shape in the convolution's dtype (that of its activations).
size_t filter_bytes(const dtp_tensor_t &w, int32_t dtype)
{
    return size_t(count_of(w)) * (dtype == DTP_FLOAT32 ? 4 : 2);
}

// Whether the descriptor's filter differs from the caller's: channels last, or the
// float32 weights of bfloat16 activations.
bool filter_converted(const dtp_conv_t &p, const dtp_tensor_t &w, int32_t act_dtype)
{
    return channels_last(p) || w.dtype != act_dtype;
}

void convert_filter(Instance &in, const dtp_tensor_t &w, int32_t from, int32_t to,
                    const void *src, void *dst, FilterMove move)
{
    check_cuda(static_cast<cudaError_t>(launch_filter_convert(in.stream, from, to, w.dims[0],
                                                              w.dims[1], w.dims[2] * w.dims[3],
                                                              src, dst, move)),
               "filter conversion kernel");
}

// The caller's (K, C, R, S) filter as this convolution's descriptor wants it: itself, or
// a copy in the filter scratch, (K, R, S, C) for channels-last activations and in the
// activations' dtype.
const void *filter_for(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w_desc,
                       const void *w, int32_t act_dtype)
{
    if (!filter_converted(p, w_desc, act_dtype))
        return w;
    void *t = in.filter_scratch(filter_bytes(w_desc, act_dtype));
    convert_filter(in, w_desc, w_desc.dtype, act_dtype, w, t,
                   channels_last(p) ? FilterMove::to_channels_last : FilterMove::keep);
    return t;
}

} // namespace

int32_t matmul(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a, int32_t trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const void *a, const void *b,
               float beta, void *out)
{
    return guarded(c, [&] {
        auto &in = self(c);
        // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
        const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const int64_t ldb = trans_b ? k : n, lda = trans_a ? m : k;
        const cublasComputeType_t compute =
            dtype == DTP_FLOAT32 && in.bf16_compute ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                    : CUBLAS_COMPUTE_32F; // float32, as PyTorch
        check_cublas(cublasGemmEx(in.blas, ob, oa, int(n), int(m), int(k), &alpha, b,
                                  blas_type(dtype), int(ldb), a, blas_type(dtype), int(lda),
                                  &beta, out, blas_type(c_dtype), int(n), compute,
                                  CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
    });
}

int32_t bias_backward(void *c, const dtp_tensor_t *dy_desc, const void *dy, float *dbias)
{
    return guarded(c, [&] {
        auto &in = self(c);
        const int64_t rows = dy_desc->dims[0], ch = dy_desc->ndims > 1 ? dy_desc->dims[1] : 1;
        const int64_t spatial = dy_desc->ndims == 4 ? dy_desc->dims[2] * dy_desc->dims[3] : 1;
        if (spatial == 1) {
            // A fully connected layer's bias: the column sums of dy (rows x ch, row-major)
            // as the product dy^T . ones on cuBLAS, as PyTorch takes it. cuDNN's
            // cudnnConvolutionBackwardBias took 0.38 ms for 1000 x 1000 on an H100.
            const cudaDataType_t t = blas_type(dy_desc->dtype);
            check_cublas(cublasGemmEx(in.blas, CUBLAS_OP_N, CUBLAS_OP_N, int(ch), 1, int(rows),
                                      &kOne, dy, t, int(ch), in.ones(dy_desc->dtype, rows), t,
                                      int(rows), &kZero, dbias, CUDA_R_32F, int(ch),
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         "cublasGemmEx (bias gradient)");
            return;
        }
        TensorDesc y(*dy_desc), b(1, ch, 1, 1, CUDNN_DATA_FLOAT);
        check_cudnn(cudnnConvolutionBackwardBias(in.dnn, &kOne, y.d, dy, &kZero, b.d, dbias),
                    "cudnnConvolutionBackwardBias");
    });
}

int32_t conv_forward(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *w_desc, const void *w, const float *bias,
                     const dtp_tensor_t *y_desc, void *y)
{
    return guarded(c, [&] {
        auto &in = self(c);
        auto &e = conv_entry(in, *p, *x_desc, *w_desc, *y_desc);
        const void *filter = filter_for(in, *p, *w_desc, w, x_desc->dtype);
        void *ws = e.fwd_bytes ? in.scratch(e.fwd_bytes) : nullptr;
        check_cudnn(cudnnConvolutionForward(in.dnn, &kOne, e.x.d, x, e.w, filter, e.conv, e.fwd,
                                            ws, e.fwd_bytes, &kZero, e.y.d, y),
                    "cudnnConvolutionForward");
        if (bias != nullptr) {
            // Channels last: every pixel of every image is a row of channels.
            const auto &d = y_desc->dims;
            const bool last = channels_last(*p);
            check_cuda(static_cast<cudaError_t>(launch_bias_add(
                           in.stream, y_desc->dtype, last ? d[0] * d[2] * d[3] : d[0], d[1],
                           last ? 1 : d[2] * d[3], y, bias)),
                       "bias kernel");
        }
    });
}

int32_t conv_backward_data(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                           const void *w, const dtp_tensor_t *dy_desc, const void *dy,
                           const dtp_tensor_t *dx_desc, void *dx)
{
    return guarded(c, [&] {
        auto &in = self(c);
        auto &e = conv_entry(in, *p, *dx_desc, *w_desc, *dy_desc);
        const void *filter = filter_for(in, *p, *w_desc, w, dx_desc->dtype);
        void *ws = e.data_bytes ? in.scratch(e.data_bytes) : nullptr;
        check_cudnn(cudnnConvolutionBackwardData(in.dnn, &kOne, e.w, filter, e.y.d, dy, e.conv,
                                                 e.bwd_data, ws, e.data_bytes, &kZero, e.x.d, dx),
                    "cudnnConvolutionBackwardData");
    });
}

int32_t conv_backward_weights(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                              const void *x, const dtp_tensor_t *dy_desc, const void *dy,
                              const dtp_tensor_t *dw_desc, void *dw, float *dbias)
{
    return guarded(c, [&] {
        auto &in = self(c);
        auto &e = conv_entry(in, *p, *x_desc, *dw_desc, *dy_desc);
        void *ws = e.filter_bytes ? in.scratch(e.filter_bytes) : nullptr;
        // Channels last or bfloat16 activations with float32 weights: the gradient comes
        // as the descriptor's filter, and goes back to the caller's (K, C, R, S) and dtype.
        const int32_t act = x_desc->dtype;
        const bool converted = filter_converted(*p, *dw_desc, act);
        void *grad = converted ? in.filter_scratch(filter_bytes(*dw_desc, act)) : dw;
        check_cudnn(cudnnConvolutionBackwardFilter(in.dnn, &kOne, e.x.d, x, e.y.d, dy, e.conv,
                                                   e.bwd_filter, ws, e.filter_bytes, &kZero, e.w,
                                                   grad),
                    "cudnnConvolutionBackwardFilter");
        if (converted)
            convert_filter(in, *dw_desc, act, dw_desc->dtype, grad, dw,
                           channels_last(*p) ? FilterMove::from_channels_last
                                             : FilterMove::keep);
        if (dbias == nullptr)
            return;
        if (dy_desc->dtype == DTP_FLOAT32) {
            check_cudnn(cudnnConvolutionBackwardBias(in.dnn, &kOne, e.y.d, dy, &kZero, e.bias.d,
                                                     dbias),
                        "cudnnConvolutionBackwardBias");
            return;
        }
        // A float32 bias gradient from bfloat16 dy: cuDNN sums one dtype, so a float32 copy.
        dtp_tensor_t f = *dy_desc;
        f.dtype = DTP_FLOAT32;
        void *dy32 = in.scratch(sizeof(float) * size_t(count_of(f)));
        check_cuda(static_cast<cudaError_t>(launch_cast(in.stream, dy_desc->dtype, DTP_FLOAT32,
                                                        count_of(f), dy, dy32)),
                   "cast kernel (bias gradient)");
        const TensorDesc dy_f32(f, p->layout);
        check_cudnn(cudnnConvolutionBackwardBias(in.dnn, &kOne, dy_f32.d, dy32, &kZero, e.bias.d,
                                                 dbias),
                    "cudnnConvolutionBackwardBias");
    });
}

int32_t pool_workspace_size(void *, const dtp_pool_t *, const dtp_tensor_t *,
                            const dtp_tensor_t *, size_t *bytes)
{
    *bytes = 0; // cuDNN's max pooling backward recomputes the argmax from x and y
    return DTP_OK;
}

int32_t pool_forward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *y_desc, void *y, void *)
{
    return guarded(c, [&] {
        auto &in = self(c);
        auto &e = pool_entry(in, *p, *x_desc, *y_desc);
        check_cudnn(cudnnPoolingForward(in.dnn, e.pool, &kOne, e.x.d, x, &kZero, e.y.d, y),
                    "cudnnPoolingForward");
    });
}

int32_t pool_backward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                      const dtp_tensor_t *y_desc, const void *y, const void *dy, void *dx,
                      const void *)
{
    return guarded(c, [&] {
        auto &in = self(c);
        if (p->kind == DTP_POOL_MAX && (x == nullptr || y == nullptr))
            throw Failure(DTP_ERR_INVALID_ARGUMENT,
                          "max pooling backward on cuDNN needs the forward's x and y");
        auto &e = pool_entry(in, *p, *x_desc, *y_desc);
        check_cudnn(cudnnPoolingBackward(in.dnn, e.pool, &kOne, e.y.d, y, e.y.d, dy, e.x.d, x,
                                         &kZero, e.x.d, dx),
                    "cudnnPoolingBackward");
    });
}

} // namespace dtp::cudnn

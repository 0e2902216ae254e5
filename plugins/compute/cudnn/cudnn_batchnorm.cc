// SPDX-License-Identifier: Apache-2.0
// Batch norm on the plugin's own kernels (cudnn_bn_kernels.h) or on cuDNN
// (cudnnBatchNormalization*), as DISTTRAIN_CUDNN_BATCHNORM and the tensor decide
// (cudnn_bn_choice.h): by default the own kernels for the (rows, C) view of channels-last
// activations and for bfloat16 activations, cuDNN for 4-D float32 and float16.
//
// On cuDNN, bfloat16 activations (float32 scale, shift and statistics, as compute.h's
// mixed precision has them) run natively where this cuDNN takes them. Where it refuses
// them (CUDNN_STATUS_NOT_SUPPORTED or BAD_PARAM on the first call; PyTorch does not ask
// cuDNN for bfloat16 batch norm either), the instance remembers, and bfloat16 tensors go
// through float32 copies in the scratch, cast in and out by this plugin's kernels: a pass
// more over each tensor, the same result.
//
// Fused with ReLU: the own kernels apply it in their element-wise pass (forward) and mask
// dy by the forward's output as they read it (backward). On cuDNN the plugin composes:
// the batch norm then its ReLU kernel in place; its ReLU backward kernel into a buffer
// from the stream-ordered pool, then cuDNN's backward on that buffer.
#include "cudnn_bn_kernels.h"
#include "cudnn_context.h"
#include "cudnn_kernels.h"
#include "cudnn_ops.h"

#include <memory>

namespace dtp::cudnn {

namespace {

Instance &self(void *c) { return *static_cast<Instance *>(c); }

const float kOne = 1.0f, kZero = 0.0f;

// (N, C, H, W) or (rows, C) data and its per-channel (1, C, 1, 1) float32 parameters.
// (rows, C) is described channels-last, (rows, C, 1, 1) NHWC: channel-last activations
// come to batch norm as their (N * H * W, C) view, and cuDNN's NCHW kernels would read
// each channel with a stride of C elements. Training on them uses cuDNN's persistent
// kernels, as PyTorch does for channels-last training (their reduction caveat concerns
// NCHW only): on an H100 they made ResNet-50 4x faster than the plain ones on this view,
// and still 3x slower than NCHW batch norm (models/README.md).
struct NormDescs {
    TensorDesc x, param;
    cudnnBatchNormMode_t training_mode;
    explicit NormDescs(const dtp_tensor_t &t)
        : x(t.ndims == 2 ? TensorDesc(t.dims[0], t.dims[1], 1, 1, cudnn_type(t.dtype),
                                      CUDNN_TENSOR_NHWC)
                         : TensorDesc(t)),
          param(1, t.dims[1], 1, 1, CUDNN_DATA_FLOAT),
          training_mode(t.ndims == 2 ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT
                                     : CUDNN_BATCHNORM_SPATIAL)
    {
    }
};

bool refused(cudnnStatus_t rc)
{
    return rc == CUDNN_STATUS_NOT_SUPPORTED || rc == CUDNN_STATUS_BAD_PARAM;
}

// Runs call(desc, tensors...) on cuDNN: directly for float32 (and for bfloat16 while this
// cuDNN takes it), else on float32 copies. `ins` are read (cast in), `outs` written (cast
// out after the call); each is a pointer to a tensor of t's shape.
template <size_t In, size_t Out, typename Call>
void run(Instance &in, const dtp_tensor_t &t, const void *const (&ins)[In],
         void *const (&outs)[Out], const char *what, Call &&call)
{
    const bool bf16 = t.dtype == DTP_BFLOAT16;
    if (!bf16 || !in.bn_bf16_refused) {
        const cudnnStatus_t rc = call(NormDescs(t), ins, outs);
        if (!bf16 || !refused(rc)) {
            check_cudnn(rc, what);
            return;
        }
        cudaGetLastError();
        in.bn_bf16_refused = true;
    }
    dtp_tensor_t f = t;
    f.dtype = DTP_FLOAT32;
    const int64_t n = count_of(t);
    auto *base = static_cast<float *>(in.scratch(sizeof(float) * size_t(n) * (In + Out)));
    const void *ins32[In];
    void *outs32[Out];
    for (size_t i = 0; i < In; ++i) {
        ins32[i] = base + i * size_t(n);
        check_cuda(static_cast<cudaError_t>(launch_cast(in.stream, DTP_BFLOAT16, DTP_FLOAT32,
                                                        n, ins[i], base + i * size_t(n))),
                   "cast kernel (batch norm input)");
    }
    for (size_t o = 0; o < Out; ++o)
        outs32[o] = base + (In + o) * size_t(n);
    check_cudnn(call(NormDescs(f), ins32, outs32), what);
    for (size_t o = 0; o < Out; ++o)
        check_cuda(static_cast<cudaError_t>(launch_cast(in.stream, DTP_FLOAT32, DTP_BFLOAT16,
                                                        n, outs32[o], outs[o])),
                   "cast kernel (batch norm output)");
}

// The own kernels' view of t: n planes of spatial elements per channel, spatial 1 for
// (rows, C).
BnShape shape_of(const dtp_tensor_t &t)
{
    int64_t spatial = 1;
    for (int i = 2; i < t.ndims; ++i)
        spatial *= t.dims[i];
    return {t.dtype, t.dims[0], t.ndims > 1 ? t.dims[1] : 1, spatial};
}

bool native(const Instance &in, const dtp_tensor_t &t)
{
    return native_batchnorm(in.batchnorm, t.dtype, t.ndims);
}

// The own kernels' partial sums and coefficients, taken from the instance's stream-ordered
// pool and given back in stream order after the kernels: neither waits for the GPU (the
// growable scratch waits for the stream whenever it grows).
class Partials {
public:
    Partials(Instance &in, const BnShape &shape) : in_(in)
    {
        check_cuda(cudaMallocFromPoolAsync(&data_, bn_scratch_bytes(shape, in.sm_count),
                                           in.pool, in.stream),
                   "cudaMallocFromPoolAsync (batch norm partial sums)");
    }
    ~Partials() { cudaFreeAsync(data_, in_.stream); }
    Partials(const Partials &) = delete;
    Partials &operator=(const Partials &) = delete;
    BnLaunch launch() const { return {in_.stream, in_.sm_count, data_}; }

private:
    Instance &in_;
    void *data_ = nullptr;
};

void launched(int rc, const char *what) { check_cuda(static_cast<cudaError_t>(rc), what); }

// A tensor-sized buffer from the instance's stream-ordered pool, given back in stream
// order: the ReLU-masked gradient on the cuDNN path (the growable scratch is run()'s).
class PooledTensor {
public:
    PooledTensor(Instance &in, const dtp_tensor_t &t) : in_(in)
    {
        const size_t bytes = size_t(count_of(t)) * (t.dtype == DTP_FLOAT32 ? 4 : 2);
        check_cuda(cudaMallocFromPoolAsync(&data_, bytes, in.pool, in.stream),
                   "cudaMallocFromPoolAsync (ReLU-masked gradient)");
    }
    ~PooledTensor() { cudaFreeAsync(data_, in_.stream); }
    PooledTensor(const PooledTensor &) = delete;
    PooledTensor &operator=(const PooledTensor &) = delete;
    void *get() const { return data_; }

private:
    Instance &in_;
    void *data_ = nullptr;
};

// After cuDNN's batch norm: the fused ReLU, or the shortcut z added before it, by the
// kernels the unfused calls would run.
void finish_unfused(Instance &in, const dtp_tensor_t &t, const void *z, void *y, bool relu)
{
    if (z != nullptr)
        launched(launch_add_relu(in.stream, t.dtype, count_of(t), y, z, y),
                 "add+relu kernel (after cuDNN's batch norm)");
    else if (relu)
        launched(launch_relu(in.stream, t.dtype, count_of(t), y, y),
                 "relu kernel (after cuDNN's batch norm)");
}

// z: the shortcut added before the ReLU (relu then implied), or NULL.
int32_t forward_training(void *c, const dtp_tensor_t *x_desc, const void *x, const void *z,
                         const float *scale, const float *shift, float epsilon,
                         float momentum, void *y, float *save_mean, float *save_invstd,
                         float *running_mean, float *running_var, bool relu)
{
    return guarded(c, [&] {
        auto &in = self(c);
        if (native(in, *x_desc)) {
            const BnShape shape = shape_of(*x_desc);
            const Partials partials(in, shape);
            launched(launch_bn_forward_training(partials.launch(), shape, x, z, scale, shift,
                                                epsilon, momentum, y, save_mean, save_invstd,
                                                running_mean, running_var, relu),
                     "batch norm forward kernels");
            return;
        }
        run(in, *x_desc, {x}, {y}, "cudnnBatchNormalizationForwardTraining",
            [&](const NormDescs &d, const void *const *i, void *const *o) {
                return cudnnBatchNormalizationForwardTraining(
                    in.dnn, d.training_mode, &kOne, &kZero, d.x.d, i[0], d.x.d, o[0], d.param.d,
                    scale, shift, momentum, running_mean, running_var, epsilon, save_mean,
                    save_invstd);
            });
        finish_unfused(in, *x_desc, z, y, relu);
    });
}

int32_t forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x, const void *z,
                          const float *scale, const float *shift, const float *running_mean,
                          const float *running_var, float epsilon, void *y, bool relu)
{
    return guarded(c, [&] {
        auto &in = self(c);
        if (native(in, *x_desc)) {
            const BnShape shape = shape_of(*x_desc);
            const Partials partials(in, shape);
            launched(launch_bn_forward_inference(partials.launch(), shape, x, z, scale, shift,
                                                 running_mean, running_var, epsilon, y, relu),
                     "batch norm inference kernels");
            return;
        }
        run(in, *x_desc, {x}, {y}, "cudnnBatchNormalizationForwardInference",
            [&](const NormDescs &d, const void *const *i, void *const *o) {
                return cudnnBatchNormalizationForwardInference(
                    in.dnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.x.d, i[0], d.x.d, o[0],
                    d.param.d, scale, shift, running_mean, running_var, epsilon);
            });
        finish_unfused(in, *x_desc, z, y, relu);
    });
}

// relu_y: the fused forward's output, whose sign masks dy; NULL for the plain backward.
int32_t backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *relu_y,
                 const void *dy, const float *scale, const float *save_mean,
                 const float *save_invstd, float epsilon, void *dx, float *dscale,
                 float *dshift)
{
    return guarded(c, [&] {
        auto &in = self(c);
        if (native(in, *x_desc)) {
            const BnShape shape = shape_of(*x_desc);
            const Partials partials(in, shape);
            launched(launch_bn_backward(partials.launch(), shape, x, dy, relu_y, scale,
                                        save_mean, save_invstd, dx, dscale, dshift),
                     "batch norm backward kernels");
            return;
        }
        std::unique_ptr<PooledTensor> masked;
        if (relu_y != nullptr) {
            masked = std::make_unique<PooledTensor>(in, *x_desc);
            launched(launch_relu_backward(in.stream, x_desc->dtype, count_of(*x_desc), relu_y,
                                          dy, masked->get()),
                     "relu backward kernel (before cuDNN's batch norm backward)");
            dy = masked->get();
        }
        run(in, *x_desc, {x, dy}, {dx}, "cudnnBatchNormalizationBackward",
            [&](const NormDescs &d, const void *const *i, void *const *o) {
                return cudnnBatchNormalizationBackward(
                    in.dnn, d.training_mode, &kOne, &kZero, &kOne, &kZero, d.x.d, i[0], d.x.d,
                    i[1], d.x.d, o[0], d.param.d, scale, dscale, dshift, epsilon, save_mean,
                    save_invstd);
            });
    });
}

} // namespace

int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean, float *save_invstd,
                                   float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, nullptr, scale, shift, epsilon, momentum, y,
                            save_mean, save_invstd, running_mean, running_var, false);
}

int32_t batchnorm_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                        const float *scale, const float *shift,
                                        float epsilon, float momentum, void *y,
                                        float *save_mean, float *save_invstd,
                                        float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, nullptr, scale, shift, epsilon, momentum, y,
                            save_mean, save_invstd, running_mean, running_var, true);
}

int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, nullptr, scale, shift, running_mean, running_var,
                             epsilon, y, false);
}

int32_t batchnorm_relu_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                         const float *scale, const float *shift,
                                         const float *running_mean, const float *running_var,
                                         float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, nullptr, scale, shift, running_mean, running_var,
                             epsilon, y, true);
}

int32_t batchnorm_add_relu_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                            const void *z, const float *scale,
                                            const float *shift, float epsilon, float momentum,
                                            void *y, float *save_mean, float *save_invstd,
                                            float *running_mean, float *running_var)
{
    return forward_training(c, x_desc, x, z, scale, shift, epsilon, momentum, y, save_mean,
                            save_invstd, running_mean, running_var, true);
}

int32_t batchnorm_add_relu_forward_inference(void *c, const dtp_tensor_t *x_desc,
                                             const void *x, const void *z, const float *scale,
                                             const float *shift, const float *running_mean,
                                             const float *running_var, float epsilon, void *y)
{
    return forward_inference(c, x_desc, x, z, scale, shift, running_mean, running_var, epsilon,
                             y, true);
}

int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale, const float *save_mean, const float *save_invstd,
                           float epsilon, void *dx, float *dscale, float *dshift)
{
    return backward(c, x_desc, x, nullptr, dy, scale, save_mean, save_invstd, epsilon, dx,
                    dscale, dshift);
}

int32_t batchnorm_relu_backward(void *c, const dtp_tensor_t *x_desc, const void *x,
                                const void *y, const void *dy, const float *scale,
                                const float *save_mean, const float *save_invstd,
                                float epsilon, void *dx, float *dscale, float *dshift)
{
    return backward(c, x_desc, x, y, dy, scale, save_mean, save_invstd, epsilon, dx, dscale,
                    dshift);
}

} // namespace dtp::cudnn

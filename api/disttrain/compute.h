/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain compute API: devices, memory and the operations training needs.
 *
 * A dt_compute_h is a compute context: one compute plugin (oneDNN on CPU, cuDNN on GPU),
 * one device and a thread count. Every operation takes the context, value descriptors of
 * its tensors (dt_tensor_desc_t) and plain pointers to their data in the context's
 * memory (dt_compute_alloc). With a CPU plugin that memory is ordinary host memory, so
 * any host pointer works; with a GPU plugin it is device memory.
 *
 * Layout: tensors are dense and row-major; 4-D activations are NCHW, convolution weights
 * OIHW (O = output channels, I = input channels / groups), 2-D activations (N, C).
 * Convolution and pooling also take channels-last activations (dt_tensor_layout_t
 * DT_LAYOUT_NHWC in their params): their descriptors are then (N, H, W, C), still dense
 * row-major; weights stay OIHW. Element-wise operations do not care, and batch
 * normalisation of NHWC activations is that of the (N * H * W, C) view.
 * Per-channel vectors (bias, batch-norm scale/shift/statistics) are float32 with C
 * elements whatever the activations' dtype.
 *
 * Dtypes (mixed precision): the activations of an operation (x, y, dx, dy) share one
 * dtype, float32, bfloat16 or float16. Convolution weights (w, dw) have that dtype too,
 * or are float32 with bfloat16 activations: a bfloat16 network keeps float32 master
 * weights and receives float32 weight gradients, and the plugin converts the weights
 * for the product (a GPU plugin may compute the weight gradient in bfloat16 and widen it,
 * as cuDNN's bfloat16 convolutions and PyTorch's autocast give it). Any other combination
 * fails with DT_ERR_INVALID_ARGUMENT naming both descriptors; a plugin that cannot run a
 * combination the API allows fails with DT_ERR_UNSUPPORTED, and one built before these
 * rules (compute ops version 1) is given none of the mixed ones: the call fails with
 * DT_ERR_UNSUPPORTED naming the fix.
 *
 * Execution: with a CPU plugin every call blocks until its result is written. With a GPU
 * plugin operations are queued in call order on the context's stream and return at once;
 * dt_compute_memcpy with a host side, calls that write a host scalar (the loss) and
 * dt_compute_synchronize block until everything queued before them has finished.
 *
 * Threads: a context is not thread safe; use one context per thread, or lock. Contexts
 * are independent of each other and of dt_context_h.
 *
 * Errors are reported like the rest of disttrain.h: a dt_status_t, and a message in
 * dt_last_error() that names the argument that was wrong (a shape that does not match,
 * an unknown dtype, an operation this plugin cannot run with DT_ERR_UNSUPPORTED).
 * Outputs are written only on DT_OK, except the tensors an operation computes, which
 * are undefined after an error.
 */
#ifndef DISTTRAIN_COMPUTE_H
#define DISTTRAIN_COMPUTE_H

#include "disttrain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------ */
/* Tensor descriptors                                                                     */
/* ------------------------------------------------------------------------------------ */

#define DT_TENSOR_MAX_DIMS 4

/**
 * Shape and element type of a dense row-major tensor. A value type: fill it on the
 * stack (or with dt_tensor_desc_2d / _4d). dims[i] > 0 for i < ndims; the rest unused.
 * Operations accept DT_FLOAT32 everywhere, DT_BFLOAT16 where the plugin computes in it
 * (matmul, convolution, ReLU, pooling, add, axpby, scale, cast), DT_FLOAT16 in casts
 * (and on GPU where noted by the plugin).
 */
typedef struct dt_tensor_desc {
    dt_dtype_t dtype;
    int32_t ndims;                    /**< 1 to DT_TENSOR_MAX_DIMS */
    int64_t dims[DT_TENSOR_MAX_DIMS]; /**< outermost first: N, C, H, W */
} dt_tensor_desc_t;

/** A descriptor of a 1-D tensor of n elements. */
static inline dt_tensor_desc_t dt_tensor_desc_1d(dt_dtype_t dtype, int64_t n)
{
    dt_tensor_desc_t d;
    d.dtype = dtype;
    d.ndims = 1;
    d.dims[0] = n;
    d.dims[1] = d.dims[2] = d.dims[3] = 0;
    return d;
}

/** A descriptor of a 2-D (rows, cols) tensor, e.g. activations (N, C). */
static inline dt_tensor_desc_t dt_tensor_desc_2d(dt_dtype_t dtype, int64_t rows,
                                                 int64_t cols)
{
    dt_tensor_desc_t d = dt_tensor_desc_1d(dtype, rows);
    d.ndims = 2;
    d.dims[1] = cols;
    return d;
}

/** A descriptor of a 4-D NCHW (or OIHW) tensor. */
static inline dt_tensor_desc_t dt_tensor_desc_4d(dt_dtype_t dtype, int64_t n, int64_t c,
                                                 int64_t h, int64_t w)
{
    dt_tensor_desc_t d = dt_tensor_desc_2d(dtype, n, c);
    d.ndims = 4;
    d.dims[2] = h;
    d.dims[3] = w;
    return d;
}

/* ------------------------------------------------------------------------------------ */
/* Compute context                                                                        */
/* ------------------------------------------------------------------------------------ */

/** A compute plugin instance bound to one device. */
typedef struct dt_compute *dt_compute_h;

/** Bits of dt_compute_params_t.field_mask: which fields the caller set. */
enum dt_compute_param_field {
    DT_COMPUTE_PARAM_FIELD_PLUGIN = 1u << 0,
    DT_COMPUTE_PARAM_FIELD_DEVICE = 1u << 1,
    DT_COMPUTE_PARAM_FIELD_THREADS = 1u << 2,
    DT_COMPUTE_PARAM_FIELD_COMPUTE_DTYPE = 1u << 3,
    DT_COMPUTE_PARAM_FIELD_CACHE_CAPACITY = 1u << 4
};

/**
 * Parameters of dt_compute_create. Zero-initialise (`= {0}`) and set field_mask bits
 * for the fields you fill; a field whose bit is clear comes from the environment or its
 * default:
 *  - plugin: DISTTRAIN_COMPUTE (onednn, cudnn, auto; default auto = cudnn when a GPU is
 *    usable, else onednn);
 *  - device: GPU ordinal, default DISTTRAIN_DEVICE, else DISTTRAIN_LOCAL_RANK modulo the
 *    number of GPUs, else 0;
 *    ignored on CPU;
 *  - threads: DISTTRAIN_THREADS, else the number of CPUs in this process's affinity mask;
 *  - compute_dtype: DISTTRAIN_COMPUTE_DTYPE (f32 or bf16; default f32). DT_BFLOAT16 lets
 *    matmul and convolution on float32 tensors compute internally in bfloat16 (float32
 *    accumulation) where the hardware has it (AVX-512 BF16 / AMX, tensor cores); on a
 *    CPU without it the context falls back to float32 and says so at warn level;
 *  - cache_capacity: how many primitives (plans) the plugin keeps, keyed by operation
 *    and shapes, least recently used evicted first; default 1024.
 * Bits are only ever appended.
 */
typedef struct dt_compute_params {
    uint64_t field_mask;
    const char *plugin;      /**< "onednn", "cudnn" or "auto" */
    int device;              /**< GPU ordinal */
    int threads;             /**< >= 1: CPU threads of this context's operations */
    dt_dtype_t compute_dtype; /**< DT_FLOAT32 or DT_BFLOAT16 */
    int cache_capacity;      /**< >= 1 */
} dt_compute_params_t;

/** The exported constructor; call dt_compute_create, which passes the header version. */
DT_API dt_status_t dt_compute_create_versioned(int api_major, int api_minor,
                                               const dt_compute_params_t *params,
                                               dt_compute_h *out);

/**
 * Creates a compute context: loads the compute plugin (libdt-compute-<name>.so, searched
 * like transports: DISTTRAIN_PLUGIN_PATH, beside libdisttrain.so, the install folder),
 * opens the device and sets the thread count. Logs the plugin, device, ISA and compute
 * dtype at info level. Blocks; not collective. params may be NULL (all from the
 * environment). The caller owns *out and frees it with dt_compute_destroy.
 * Errors: DT_ERR_VERSION, DT_ERR_INVALID_CONFIG (a bad variable or param, named in the
 * message), DT_ERR_PLUGIN_NOT_FOUND (lists the folders searched), DT_ERR_PLUGIN_LOAD,
 * DT_ERR_PLUGIN_ABI, DT_ERR_UNSUPPORTED (no usable device, e.g. cudnn without a GPU).
 */
static inline dt_status_t dt_compute_create(const dt_compute_params_t *params,
                                            dt_compute_h *out)
{
    return dt_compute_create_versioned(DT_API_MAJOR, DT_API_MINOR, params, out);
}

/** Waits for queued work, frees the plugin's caches and unloads it. Memory allocated
 *  on the context must be freed before. Accepts NULL. */
DT_API dt_status_t dt_compute_destroy(dt_compute_h compute);

/** Device kinds reported by dt_compute_query. */
typedef enum dt_compute_device_kind {
    DT_COMPUTE_DEVICE_CPU = 0, /**< memory is host memory */
    DT_COMPUTE_DEVICE_GPU = 1  /**< memory is device memory: copy with dt_compute_memcpy */
} dt_compute_device_kind_t;

/** Bits of dt_compute_attr_t.field_mask: which fields the caller asks for. */
enum dt_compute_attr_field {
    DT_COMPUTE_ATTR_FIELD_PLUGIN = 1u << 0,
    DT_COMPUTE_ATTR_FIELD_DEVICE_KIND = 1u << 1,
    DT_COMPUTE_ATTR_FIELD_DEVICE_NAME = 1u << 2,
    DT_COMPUTE_ATTR_FIELD_THREADS = 1u << 3,
    DT_COMPUTE_ATTR_FIELD_COMPUTE_DTYPE = 1u << 4,
    DT_COMPUTE_ATTR_FIELD_BF16_NATIVE = 1u << 5,
    DT_COMPUTE_ATTR_FIELD_STREAM = 1u << 6,
    DT_COMPUTE_ATTR_FIELD_MEMORY_PROVIDER = 1u << 7,
    DT_COMPUTE_ATTR_FIELD_TF32_CONVOLUTIONS = 1u << 8
};

/** What a context runs on. Strings are static or live as long as the context. */
typedef struct dt_compute_attr {
    uint64_t field_mask;             /**< set by the caller: the fields wanted */
    const char *plugin;              /**< "onednn" */
    dt_compute_device_kind_t device_kind;
    const char *device_name;         /**< "cpu (avx512_core_bf16)", "NVIDIA H100 ..." */
    int threads;                     /**< CPU threads used by operations */
    dt_dtype_t compute_dtype;        /**< in effect: DT_FLOAT32 or DT_BFLOAT16 */
    int bf16_native;                 /**< 1 when the device computes bfloat16 in hardware */
    /** The device queue the context's operations run on (a cudaStream_t for cuDNN), to
     *  pass as dt_op_params_t.stream so that a collective on a tensor starts after the
     *  operations that produced it; NULL where operations block (CPU). */
    void *stream;
    /** The memory provider that knows the context's memory ("cuda" for cuDNN), to pass
     *  as dt_context_params_t.memory (or DISTTRAIN_MEMORY); NULL: host memory. */
    const char *memory_provider;
    /** 1 when float32 convolutions run in TF32 on tensor cores (the cuDNN plugin's default
     *  on Ampere and later GPUs, as PyTorch's torch.backends.cudnn.allow_tf32); else 0:
     *  strictly float32 (CPU, DISTTRAIN_TF32=0, older GPUs), or bfloat16 when
     *  compute_dtype is. A model picks its layout by it: NHWC wins on tensor cores and
     *  loses without them. */
    int tf32_convolutions;
} dt_compute_attr_t;

/** Fills the fields of *attr whose bits attr->field_mask has. Never blocks. */
DT_API dt_status_t dt_compute_query(dt_compute_h compute, dt_compute_attr_t *attr);

/** Blocks until every operation queued on the context has finished (no-op on CPU).
 *  Returns the first error of a queued operation, if any. */
DT_API dt_status_t dt_compute_synchronize(dt_compute_h compute);

/* ------------------------------------------------------------------------------------ */
/* Memory                                                                                 */
/* ------------------------------------------------------------------------------------ */

/**
 * Allocates bytes (> 0) of the context's memory, 64-byte aligned, uninitialised. The
 * caller frees it with dt_compute_free on the same context. Errors: DT_ERR_NO_MEMORY.
 */
DT_API dt_status_t dt_compute_alloc(dt_compute_h compute, size_t bytes, void **out);

/** Frees memory from dt_compute_alloc after queued work using it. Accepts NULL. */
DT_API dt_status_t dt_compute_free(dt_compute_h compute, void *ptr);

/** Direction of dt_compute_memcpy. On CPU all four are plain copies. */
typedef enum dt_copy_kind {
    DT_COPY_HOST_TO_DEVICE = 0,
    DT_COPY_DEVICE_TO_HOST = 1,
    DT_COPY_DEVICE_TO_DEVICE = 2,
    DT_COPY_HOST_TO_HOST = 3
} dt_copy_kind_t;

/** Copies bytes from src to dst (non-overlapping). Blocks when a side is host memory;
 *  device-to-device is queued. */
DT_API dt_status_t dt_compute_memcpy(dt_compute_h compute, void *dst, const void *src,
                                     size_t bytes, dt_copy_kind_t kind);

/** Sets every element of x (described by desc) to value, converted to desc->dtype
 *  (float32, bfloat16, float16 or int32). */
DT_API dt_status_t dt_compute_fill(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                   void *x, float value);

/** Converts src (src_desc) into dst, which has src's shape and dtype dst_dtype; any pair
 *  of float32, bfloat16 and float16 (round to nearest even). */
DT_API dt_status_t dt_compute_cast(dt_compute_h compute, const dt_tensor_desc_t *src_desc,
                                   const void *src, dt_dtype_t dst_dtype, void *dst);

/* ------------------------------------------------------------------------------------ */
/* Matrix multiply and element-wise operations                                           */
/* ------------------------------------------------------------------------------------ */

/**
 * C = alpha * op(A) * op(B) + beta * C with row-major dense matrices, where op(A) is
 * m x k (A is m x k, or k x m when trans_a), op(B) is k x n (B is k x n, or n x k when
 * trans_b) and C is m x n. All three have `dtype` (float32 or bfloat16; with bfloat16
 * inputs C may be float32: pass c_dtype). beta = 0 ignores C's old contents (NaN too).
 */
DT_API dt_status_t dt_compute_matmul(dt_compute_h compute, dt_dtype_t dtype,
                                     dt_dtype_t c_dtype, int trans_a, int trans_b,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const void *a, const void *b, float beta, void *c);

/** c = a + b element-wise; all three share desc. c may be a or b. */
DT_API dt_status_t dt_compute_add(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                  const void *a, const void *b, void *c);

/** y = alpha * x + beta * y element-wise; x and y share desc. beta = 0 ignores y. */
DT_API dt_status_t dt_compute_axpby(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                    float alpha, const void *x, float beta, void *y);

/** x = alpha * x element-wise. */
DT_API dt_status_t dt_compute_scale(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                    float alpha, void *x);

/**
 * y += bias broadcast over every dimension but 1 (channels): y is (N, C) or (N, C, H,
 * W); bias is float32 with C elements (desc names it so errors can say which is wrong).
 */
DT_API dt_status_t dt_compute_bias_add(dt_compute_h compute, const dt_tensor_desc_t *y_desc,
                                       void *y, const dt_tensor_desc_t *bias_desc,
                                       const void *bias);

/** dbias = sum of dy over every dimension but 1; dbias is float32 with C elements and is
 *  overwritten. */
DT_API dt_status_t dt_compute_bias_backward(dt_compute_h compute,
                                            const dt_tensor_desc_t *dy_desc, const void *dy,
                                            const dt_tensor_desc_t *dbias_desc,
                                            void *dbias);

/** y = max(x, 0); y may be x. */
DT_API dt_status_t dt_compute_relu_forward(dt_compute_h compute,
                                           const dt_tensor_desc_t *desc, const void *x,
                                           void *y);

/** dx = dy where x > 0, else 0; x is the forward input (or output: same sign). dx may
 *  be dy. */
DT_API dt_status_t dt_compute_relu_backward(dt_compute_h compute,
                                            const dt_tensor_desc_t *desc, const void *x,
                                            const void *dy, void *dx);

/* ------------------------------------------------------------------------------------ */
/* Convolution                                                                            */
/* ------------------------------------------------------------------------------------ */

/** The memory order of 4-D activations in convolution and pooling. */
typedef enum dt_tensor_layout {
    DT_LAYOUT_NCHW = 0, /**< descriptors (N, C, H, W): the default */
    /** Channels last: descriptors (N, H, W, C). CPU convolutions run on it without
     *  reordering activations to a blocked layout and back around every call. */
    DT_LAYOUT_NHWC = 1
} dt_tensor_layout_t;

/** Bits of dt_conv_params_t.field_mask. */
enum dt_conv_param_field {
    DT_CONV_PARAM_FIELD_STRIDE = 1u << 0,
    DT_CONV_PARAM_FIELD_PADDING = 1u << 1,
    DT_CONV_PARAM_FIELD_DILATION = 1u << 2,
    DT_CONV_PARAM_FIELD_GROUPS = 1u << 3,
    DT_CONV_PARAM_FIELD_LAYOUT = 1u << 4
};

/**
 * A 2-D convolution (cross-correlation, as in PyTorch). Clear bits take the defaults:
 * stride {1, 1}, padding {0, 0} (symmetric, top/bottom and left/right), dilation {1, 1}
 * (PyTorch's meaning: 1 is a dense kernel), groups 1, layout DT_LAYOUT_NCHW (of x, y, dx
 * and dy alike). Index 0 is height, 1 width.
 * Output size: (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1.
 */
typedef struct dt_conv_params {
    uint64_t field_mask;
    int32_t stride[2];
    int32_t padding[2];
    int32_t dilation[2];
    int32_t groups;
    dt_tensor_layout_t layout;
} dt_conv_params_t;

/**
 * y = conv(x, w) + bias. x (N, C, H, W), w (O, C / groups, KH, KW), y (N, O, OH, OW),
 * bias float32 (O) or NULL (bias_desc then NULL too). x and y share a dtype; w has it
 * too, or is float32 with bfloat16 x and y (see Dtypes above).
 */
DT_API dt_status_t dt_compute_conv_forward(dt_compute_h compute, const dt_conv_params_t *p,
                                           const dt_tensor_desc_t *x_desc, const void *x,
                                           const dt_tensor_desc_t *w_desc, const void *w,
                                           const dt_tensor_desc_t *bias_desc,
                                           const void *bias,
                                           const dt_tensor_desc_t *y_desc, void *y);

/** dx = gradient of the convolution's input from dy and w; dx is overwritten. dx and dy
 *  share a dtype; w has it too, or is float32 with bfloat16 dx and dy. */
DT_API dt_status_t dt_compute_conv_backward_data(dt_compute_h compute,
                                                 const dt_conv_params_t *p,
                                                 const dt_tensor_desc_t *w_desc,
                                                 const void *w,
                                                 const dt_tensor_desc_t *dy_desc,
                                                 const void *dy,
                                                 const dt_tensor_desc_t *dx_desc, void *dx);

/** dw (and dbias unless NULL) = gradients of the weights from x and dy; overwritten.
 *  x and dy share a dtype; dw has it too, or is float32 with bfloat16 x and dy (the
 *  gradient is then accumulated and written in float32); dbias is float32. */
DT_API dt_status_t dt_compute_conv_backward_weights(
    dt_compute_h compute, const dt_conv_params_t *p, const dt_tensor_desc_t *x_desc,
    const void *x, const dt_tensor_desc_t *dy_desc, const void *dy,
    const dt_tensor_desc_t *dw_desc, void *dw, const dt_tensor_desc_t *dbias_desc,
    void *dbias);

/* ------------------------------------------------------------------------------------ */
/* Pooling                                                                                */
/* ------------------------------------------------------------------------------------ */

typedef enum dt_pool_kind {
    DT_POOL_MAX = 0,
    DT_POOL_AVG_INCLUDE_PADDING = 1, /**< divides by the kernel size (PyTorch default) */
    DT_POOL_AVG_EXCLUDE_PADDING = 2  /**< divides by the elements inside the input */
} dt_pool_kind_t;

/** Bits of dt_pool_params_t.field_mask. KERNEL and KIND are required. */
enum dt_pool_param_field {
    DT_POOL_PARAM_FIELD_KIND = 1u << 0,
    DT_POOL_PARAM_FIELD_KERNEL = 1u << 1,
    DT_POOL_PARAM_FIELD_STRIDE = 1u << 2, /**< default: the kernel size */
    DT_POOL_PARAM_FIELD_PADDING = 1u << 3, /**< default: {0, 0} */
    DT_POOL_PARAM_FIELD_LAYOUT = 1u << 4   /**< default: DT_LAYOUT_NCHW */
};

/** A 2-D pooling window over NCHW (or, with layout, NHWC) tensors; index 0 is height, 1
 *  width. Output size: (in + 2 * pad - kernel) / stride + 1 (floor). */
typedef struct dt_pool_params {
    uint64_t field_mask;
    dt_pool_kind_t kind;
    int32_t kernel[2];
    int32_t stride[2];
    int32_t padding[2];
    dt_tensor_layout_t layout;
} dt_pool_params_t;

/** Bytes of workspace that max pooling keeps between forward and backward (0 for
 *  average pooling or when the plugin needs none). */
DT_API dt_status_t dt_compute_pool_workspace_size(dt_compute_h compute,
                                                  const dt_pool_params_t *p,
                                                  const dt_tensor_desc_t *x_desc,
                                                  const dt_tensor_desc_t *y_desc,
                                                  size_t *bytes);

/** y = pool(x). workspace (context memory of pool_workspace_size bytes) records the
 *  argmax for max pooling when training; NULL for inference. */
DT_API dt_status_t dt_compute_pool_forward(dt_compute_h compute, const dt_pool_params_t *p,
                                           const dt_tensor_desc_t *x_desc, const void *x,
                                           const dt_tensor_desc_t *y_desc, void *y,
                                           void *workspace);

/** dx = gradient of pooling; x and y are the forward's input and output, workspace the
 *  forward's (required for max pooling when pool_workspace_size is > 0). dx is
 *  overwritten. */
DT_API dt_status_t dt_compute_pool_backward(dt_compute_h compute, const dt_pool_params_t *p,
                                            const dt_tensor_desc_t *x_desc, const void *x,
                                            const dt_tensor_desc_t *y_desc, const void *y,
                                            const void *dy, void *dx,
                                            const void *workspace);

/* ------------------------------------------------------------------------------------ */
/* Batch normalisation (per channel: dimension 1 of (N, C) or (N, C, H, W))              */
/* ------------------------------------------------------------------------------------ */

/**
 * Training forward: y = scale * (x - mean) * invstd + shift with the batch's mean and
 * biased variance, invstd = 1 / sqrt(var + epsilon). Writes save_mean and save_invstd
 * (float32, C each) for the backward. When running_mean and running_var are not NULL,
 * updates them as PyTorch does: running = (1 - momentum) * running + momentum * batch,
 * with the unbiased variance. scale, shift: float32 (C). x and y share x_desc, whose
 * dtype may be bfloat16 (statistics are accumulated in float32 or wider either way).
 */
DT_API dt_status_t dt_compute_batchnorm_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, float epsilon, float momentum, void *y, float *save_mean,
    float *save_invstd, float *running_mean, float *running_var);

/** Inference forward with the running statistics: y = scale * (x - running_mean) /
 *  sqrt(running_var + epsilon) + shift. */
DT_API dt_status_t dt_compute_batchnorm_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, const float *running_mean, const float *running_var,
    float epsilon, void *y);

/** Backward of the training forward: dx, dscale and dshift (overwritten) from x, dy,
 *  scale and the saved statistics. epsilon must be the forward's. */
DT_API dt_status_t dt_compute_batchnorm_backward(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *dy,
    const float *scale, const float *save_mean, const float *save_invstd, float epsilon,
    void *dx, float *dscale, float *dshift);

/* ------------------------------------------------------------------------------------ */
/* Fused ReLU: batch normalisation then ReLU, addition then ReLU                          */
/* ------------------------------------------------------------------------------------ */

/*
 * Each function below gives bit for bit what its unfused sequence gives (the batch-norm
 * or add call above, then dt_compute_relu_forward; dt_compute_relu_backward, then
 * dt_compute_batchnorm_backward), in fewer passes over memory where the plugin fuses
 * them (the forwards and the add in one).
 * A plugin without the fused kernels runs that sequence itself, so every plugin accepts
 * these calls.
 *
 * They are _relu variants rather than an activation argument on the unfused functions:
 * the backward of a fused activation needs what that activation's gradient is computed
 * from, and only ReLU's can be read off the forward's output y (y > 0), so the argument
 * list is the activation's own; a later activation gets its own variants. Since 1.2.
 */

/** dt_compute_batchnorm_forward_training, then y = max(y, 0). */
DT_API dt_status_t dt_compute_batchnorm_relu_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, float epsilon, float momentum, void *y, float *save_mean,
    float *save_invstd, float *running_mean, float *running_var);

/** dt_compute_batchnorm_forward_inference, then y = max(y, 0). */
DT_API dt_status_t dt_compute_batchnorm_relu_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, const float *running_mean, const float *running_var,
    float epsilon, void *y);

/** Backward of dt_compute_batchnorm_relu_forward_training: dy is masked by y > 0 (y is
 *  that forward's output, x its input), then dx, dscale and dshift are those of
 *  dt_compute_batchnorm_backward on the masked gradient. dx must not be x, y or dy. */
DT_API dt_status_t dt_compute_batchnorm_relu_backward(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *y,
    const void *dy, const float *scale, const float *save_mean, const float *save_invstd,
    float epsilon, void *dx, float *dscale, float *dshift);

/** c = max(a + b, 0) element-wise; all three share desc. c may be a or b. */
DT_API dt_status_t dt_compute_add_relu(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                       const void *a, const void *b, void *c);

/** ReLU's gradient of a gradient that arrives as a sum: dx = dy_a + dy_b where y > 0,
 *  else 0 (dt_compute_add, then dt_compute_relu_backward), in one pass. A residual
 *  network's block gets the gradient of its output as the sum of the next block's two
 *  branches. All four share desc; dx may be dy_a or dy_b, not y. Since 1.3. */
DT_API dt_status_t dt_compute_relu_backward_sum(dt_compute_h compute,
                                                const dt_tensor_desc_t *desc, const void *y,
                                                const void *dy_a, const void *dy_b,
                                                void *dx);

/** The end of a residual block in one pass: y = max(batchnorm(x) + z, 0), the training
 *  forward of dt_compute_batchnorm_forward_training (same statistics, same updates of the
 *  running ones) followed by dt_compute_add_relu(y, z), bit for bit, without writing the
 *  batch norm's output and reading it back. z (the block's shortcut) shares x_desc; y
 *  must not be z. There is no fused backward: dt_compute_relu_backward (or _sum) on y,
 *  then dt_compute_batchnorm_backward, which needs x and the saved statistics only.
 *  Since 1.3. */
DT_API dt_status_t dt_compute_batchnorm_add_relu_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *z,
    const float *scale, const float *shift, float epsilon, float momentum, void *y,
    float *save_mean, float *save_invstd, float *running_mean, float *running_var);

/** dt_compute_batchnorm_forward_inference, then dt_compute_add_relu(y, z), in one pass;
 *  z shares x_desc and is not y. Since 1.3. */
DT_API dt_status_t dt_compute_batchnorm_add_relu_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *z,
    const float *scale, const float *shift, const float *running_mean,
    const float *running_var, float epsilon, void *y);

/* ------------------------------------------------------------------------------------ */
/* Loss                                                                                   */
/* ------------------------------------------------------------------------------------ */

/**
 * Softmax cross-entropy of logits (N, K) float32 against labels (N int32 in [0, K), in
 * context memory). Writes probs (N, K float32, the softmax, for the backward), the mean
 * loss over the batch to *loss (host), and when correct is not NULL the number of rows
 * whose argmax equals the label to *correct (host). Blocks (it returns host values).
 * Errors: DT_ERR_INVALID_ARGUMENT for a label out of range (CPU plugins check it).
 */
DT_API dt_status_t dt_compute_softmax_cross_entropy_forward(
    dt_compute_h compute, const dt_tensor_desc_t *logits_desc, const void *logits,
    const int32_t *labels, void *probs, float *loss, int64_t *correct);

/** dlogits = (probs - onehot(labels)) * scale; pass scale = 1 / N for the gradient of
 *  the mean loss. dlogits may be probs. */
DT_API dt_status_t dt_compute_softmax_cross_entropy_backward(
    dt_compute_h compute, const dt_tensor_desc_t *probs_desc, const void *probs,
    const int32_t *labels, float scale, void *dlogits);

/* ------------------------------------------------------------------------------------ */
/* Fused optimizer updates (float32 weights, gradients and state; count elements)       */
/* ------------------------------------------------------------------------------------ */

/**
 * SGD as PyTorch's torch.optim.SGD (dampening 0):
 *   g = grad + weight_decay * w
 *   momentum > 0:  buf = momentum * buf + g;  g = nesterov ? g + momentum * buf : buf
 *   w -= lr * g
 * momentum_buf (count floats, zero before the first step) may be NULL when momentum is 0.
 */
typedef struct dt_sgd_params {
    float lr;
    float momentum;
    float weight_decay;
    int nesterov;
} dt_sgd_params_t;

DT_API dt_status_t dt_compute_sgd_update(dt_compute_h compute, const dt_sgd_params_t *p,
                                         size_t count, float *w, const float *grad,
                                         float *momentum_buf);

/**
 * Adam as torch.optim.Adam (decoupled = 0: weight decay added to the gradient) or
 * torch.optim.AdamW (decoupled = 1: w -= lr * weight_decay * w first), with bias
 * correction at `step` (1 for the first update):
 *   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
 *   w -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
 * m and v hold count floats each, zero before the first step.
 */
typedef struct dt_adam_params {
    float lr;
    float beta1;
    float beta2;
    float epsilon;
    float weight_decay;
    int decoupled;
    int64_t step;
} dt_adam_params_t;

DT_API dt_status_t dt_compute_adam_update(dt_compute_h compute, const dt_adam_params_t *p,
                                          size_t count, float *w, const float *grad,
                                          float *m, float *v);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_COMPUTE_H */

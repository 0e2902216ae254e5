/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain compute plugin ABI.
 *
 * A compute plugin runs the operations of disttrain/compute.h on one device: oneDNN on
 * CPU, cuDNN and cuBLAS on GPU. It is negotiated through DT_PLUGIN_ENTRY with kind
 * DT_PLUGIN_KIND_COMPUTE and answers a const dt_compute_v1_t.
 *
 * The core validates every argument before it calls an op: dtypes are known, shapes are
 * consistent (the output shapes of convolution and pooling included), pointers that the
 * API requires are not NULL. A plugin may therefore trust shapes, but still returns
 * DTP_ERR_UNSUPPORTED (with services->set_error) for a valid call it cannot run, such as
 * a dtype its library lacks. A NULL member means "not supported": the core answers
 * DT_ERR_UNSUPPORTED naming the plugin and the operation.
 *
 * Threading: the core calls the ops of one instance from one thread at a time (the
 * public context is not thread safe), so an instance needs no locking of its own.
 * Execution: CPU plugins finish an op before returning; GPU plugins queue it on the
 * instance's stream (see compute.h) and synchronize in memcpy with a host side, in
 * softmax_xent_forward and in synchronize.
 *
 * Ops tables are frozen once released; later versions append members.
 */
#ifndef DISTTRAIN_PLUGIN_COMPUTE_H
#define DISTTRAIN_PLUGIN_COMPUTE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DT_COMPUTE_VERSION_1 1u
/** Version 2 has version 1's table; a plugin that answers it reads the geometry's
 *  `layout` (channels-last activations in convolution and pooling) and takes bfloat16
 *  activations with float32 weights in convolution (compute.h's dtype rules), or refuses
 *  them with DTP_ERR_UNSUPPORTED and a message. The core gives a plugin that answered
 *  version 1 neither: such a plugin would read NHWC memory as NCHW and float32 weights as
 *  bfloat16, so the core refuses those calls itself. */
#define DT_COMPUTE_VERSION_2 2u
/** The newest compute ops version this header describes. */
#define DT_COMPUTE_VERSION DT_COMPUTE_VERSION_2

#define DTP_TENSOR_MAX_DIMS 4

/** A dense row-major tensor's shape (NCHW / OIHW); dtype is a DTP_* value. Convolution
 *  and pooling tensors are always described in NCHW order; their geometry's layout says
 *  whether the memory is NCHW or NHWC. */
typedef struct dtp_tensor {
    int32_t dtype;
    int32_t ndims;
    int64_t dims[DTP_TENSOR_MAX_DIMS];
} dtp_tensor_t;

/** Convolution geometry with every default already applied by the core. */
typedef struct dtp_conv {
    int32_t stride[2];
    int32_t padding[2];
    int32_t dilation[2]; /**< PyTorch's meaning: 1 is dense (oneDNN wants dilation - 1) */
    int32_t groups;
    int32_t layout; /**< DTP_LAYOUT_*: memory order of x, y, dx, dy (0 in older cores) */
} dtp_conv_t;

#define DTP_LAYOUT_NCHW 0
#define DTP_LAYOUT_NHWC 1

#define DTP_POOL_MAX 0
#define DTP_POOL_AVG_INCLUDE_PADDING 1
#define DTP_POOL_AVG_EXCLUDE_PADDING 2

/** Pooling geometry with every default already applied by the core. */
typedef struct dtp_pool {
    int32_t kind; /**< DTP_POOL_* */
    int32_t kernel[2];
    int32_t stride[2];
    int32_t padding[2];
    int32_t layout; /**< DTP_LAYOUT_*: memory order of x, y, dx, dy (0 in older cores) */
} dtp_pool_t;

#define DTP_COPY_HOST_TO_DEVICE 0
#define DTP_COPY_DEVICE_TO_HOST 1
#define DTP_COPY_DEVICE_TO_DEVICE 2
#define DTP_COPY_HOST_TO_HOST 3

#define DTP_DEVICE_CPU 0
#define DTP_DEVICE_GPU 1

typedef struct dtp_sgd {
    float lr;
    float momentum;
    float weight_decay;
    int32_t nesterov;
} dtp_sgd_t;

typedef struct dtp_adam {
    float lr;
    float beta1;
    float beta2;
    float epsilon;
    float weight_decay;
    int32_t decoupled;
    int64_t step;
} dtp_adam_t;

/** Arguments of init (core to plugin). */
typedef struct dt_compute_init_args {
    uint32_t struct_size;
    uint32_t abi_version;   /**< DT_COMPUTE_VERSION of the core */
    int32_t device;         /**< >= 0: GPU ordinal; < 0: -1 - local rank, and the plugin
                                 picks local rank modulo its device count. CPU ignores it */
    int32_t threads;        /**< >= 1 */
    int32_t compute_dtype;  /**< DTP_FLOAT32 or DTP_BFLOAT16 (requested) */
    int32_t cache_capacity; /**< >= 1 primitives kept */
    void *host;             /**< pass to every services function */
    const dt_host_services_t *services;
} dt_compute_init_args_t;

/** What an instance runs on (plugin to core); strings live as long as the instance. */
typedef struct dt_compute_info {
    uint32_t struct_size; /**< set by the core; write only within it */
    uint32_t abi_version;
    int32_t device_kind;   /**< DTP_DEVICE_* */
    int32_t threads;
    int32_t compute_dtype; /**< in effect */
    int32_t bf16_native;
    const char *device_name;
    /* Appended (a core that sets a smaller struct_size never reads them). */
    void *stream;                /**< the queue operations run on, in the runtime of the
                                      memory provider below; NULL: every op blocks (CPU) */
    const char *memory_provider; /**< the memory provider (DISTTRAIN_MEMORY name) that
                                      knows this instance's memory; NULL: host memory */
    int32_t tf32_convolutions;   /**< 1: float32 convolutions run in TF32 on tensor cores;
                                      0: otherwise (strict float32, bfloat16 compute; an
                                      older plugin's shorter struct reads as 0) */
} dt_compute_info_t;

/**
 * Version 1 (current). Every op returns a DTP_ status; `c` is the instance from init.
 *
 * init        opens the device and writes the instance to *c. A plugin that cannot run
 *             here (no GPU) returns DTP_ERR_UNSUPPORTED with set_error's message.
 * finalize    waits for queued work and frees the instance.
 * info        fills *info.
 * The remaining members are the operations of compute.h with the same names and
 * meaning, tensors described by dtp_tensor_t and geometry by dtp_conv_t / dtp_pool_t.
 * probs, loss and correct of softmax_xent_forward: loss and correct are host pointers
 * (correct may be NULL).
 */
typedef struct dt_compute_v1 {
    uint32_t struct_size;
    uint32_t abi_version; /**< the ops version it answered: DT_COMPUTE_VERSION_1 or _2 */
    const char *name;

    int32_t (*init)(const dt_compute_init_args_t *args, void **c);
    int32_t (*finalize)(void *c);
    int32_t (*info)(void *c, dt_compute_info_t *info);
    int32_t (*synchronize)(void *c);

    int32_t (*alloc)(void *c, size_t bytes, void **out);
    int32_t (*free)(void *c, void *ptr);
    int32_t (*memcpy)(void *c, void *dst, const void *src, size_t bytes, int32_t kind);
    int32_t (*fill)(void *c, const dtp_tensor_t *x_desc, void *x, float value);
    int32_t (*cast)(void *c, const dtp_tensor_t *src_desc, const void *src,
                    int32_t dst_dtype, void *dst);

    int32_t (*matmul)(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a,
                      int32_t trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const void *a, const void *b, float beta, void *out);
    int32_t (*add)(void *c, const dtp_tensor_t *desc, const void *a, const void *b,
                   void *out);
    int32_t (*axpby)(void *c, const dtp_tensor_t *desc, float alpha, const void *x,
                     float beta, void *y);
    int32_t (*scale)(void *c, const dtp_tensor_t *desc, float alpha, void *x);
    int32_t (*bias_add)(void *c, const dtp_tensor_t *y_desc, void *y, const float *bias);
    int32_t (*bias_backward)(void *c, const dtp_tensor_t *dy_desc, const void *dy,
                             float *dbias);
    int32_t (*relu_forward)(void *c, const dtp_tensor_t *desc, const void *x, void *y);
    int32_t (*relu_backward)(void *c, const dtp_tensor_t *desc, const void *x,
                             const void *dy, void *dx);

    int32_t (*conv_forward)(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                            const void *x, const dtp_tensor_t *w_desc, const void *w,
                            const float *bias, const dtp_tensor_t *y_desc, void *y);
    int32_t (*conv_backward_data)(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                                  const void *w, const dtp_tensor_t *dy_desc,
                                  const void *dy, const dtp_tensor_t *dx_desc, void *dx);
    int32_t (*conv_backward_weights)(void *c, const dtp_conv_t *p,
                                     const dtp_tensor_t *x_desc, const void *x,
                                     const dtp_tensor_t *dy_desc, const void *dy,
                                     const dtp_tensor_t *dw_desc, void *dw, float *dbias);

    int32_t (*pool_workspace_size)(void *c, const dtp_pool_t *p,
                                   const dtp_tensor_t *x_desc, const dtp_tensor_t *y_desc,
                                   size_t *bytes);
    int32_t (*pool_forward)(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                            const void *x, const dtp_tensor_t *y_desc, void *y,
                            void *workspace);
    int32_t (*pool_backward)(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                             const void *x, const dtp_tensor_t *y_desc, const void *y,
                             const void *dy, void *dx, const void *workspace);

    int32_t (*batchnorm_forward_training)(void *c, const dtp_tensor_t *x_desc,
                                          const void *x, const float *scale,
                                          const float *shift, float epsilon, float momentum,
                                          void *y, float *save_mean, float *save_invstd,
                                          float *running_mean, float *running_var);
    int32_t (*batchnorm_forward_inference)(void *c, const dtp_tensor_t *x_desc,
                                           const void *x, const float *scale,
                                           const float *shift, const float *running_mean,
                                           const float *running_var, float epsilon,
                                           void *y);
    int32_t (*batchnorm_backward)(void *c, const dtp_tensor_t *x_desc, const void *x,
                                  const void *dy, const float *scale,
                                  const float *save_mean, const float *save_invstd,
                                  float epsilon, void *dx, float *dscale, float *dshift);

    int32_t (*softmax_xent_forward)(void *c, const dtp_tensor_t *logits_desc,
                                    const void *logits, const int32_t *labels, void *probs,
                                    float *loss, int64_t *correct);
    int32_t (*softmax_xent_backward)(void *c, const dtp_tensor_t *probs_desc,
                                     const void *probs, const int32_t *labels, float scale,
                                     void *dlogits);

    int32_t (*sgd_update)(void *c, const dtp_sgd_t *p, size_t count, float *w,
                          const float *grad, float *momentum_buf);
    int32_t (*adam_update)(void *c, const dtp_adam_t *p, size_t count, float *w,
                           const float *grad, float *m, float *v);

    /* Appended: the fused ReLU ops of compute.h (batchnorm_relu_*, add_relu). A table
     * whose struct_size ends before them (any plugin built against an older header), or
     * a NULL member, means not fused: the core then runs the unfused members above in
     * sequence (batch norm then relu_forward in place; relu_backward into a scratch
     * buffer from alloc, then batchnorm_backward; add then relu_forward in place), which
     * gives the same bits; a plugin that fills them must give that sequence's results.
     * They need no new ops version: a table with or without them is correct. */
    int32_t (*batchnorm_relu_forward_training)(void *c, const dtp_tensor_t *x_desc,
                                               const void *x, const float *scale,
                                               const float *shift, float epsilon,
                                               float momentum, void *y, float *save_mean,
                                               float *save_invstd, float *running_mean,
                                               float *running_var);
    int32_t (*batchnorm_relu_forward_inference)(void *c, const dtp_tensor_t *x_desc,
                                                const void *x, const float *scale,
                                                const float *shift,
                                                const float *running_mean,
                                                const float *running_var, float epsilon,
                                                void *y);
    int32_t (*batchnorm_relu_backward)(void *c, const dtp_tensor_t *x_desc, const void *x,
                                       const void *y, const void *dy, const float *scale,
                                       const float *save_mean, const float *save_invstd,
                                       float epsilon, void *dx, float *dscale,
                                       float *dshift);
    int32_t (*add_relu)(void *c, const dtp_tensor_t *desc, const void *a, const void *b,
                        void *out);
    /* Appended later, on the same terms: relu_backward_sum of compute.h (NULL: the core
     * runs add into a scratch buffer, then relu_backward). */
    int32_t (*relu_backward_sum)(void *c, const dtp_tensor_t *desc, const void *y,
                                 const void *dy_a, const void *dy_b, void *dx);
    /* Appended later, on the same terms: batchnorm_add_relu_* of compute.h (NULL: the
     * core runs the batch norm into y, then add_relu(y, z) in place). z shares x_desc
     * and is never y. */
    int32_t (*batchnorm_add_relu_forward_training)(void *c, const dtp_tensor_t *x_desc,
                                                   const void *x, const void *z,
                                                   const float *scale, const float *shift,
                                                   float epsilon, float momentum, void *y,
                                                   float *save_mean, float *save_invstd,
                                                   float *running_mean, float *running_var);
    int32_t (*batchnorm_add_relu_forward_inference)(void *c, const dtp_tensor_t *x_desc,
                                                    const void *x, const void *z,
                                                    const float *scale, const float *shift,
                                                    const float *running_mean,
                                                    const float *running_var, float epsilon,
                                                    void *y);
} dt_compute_v1_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_PLUGIN_COMPUTE_H */

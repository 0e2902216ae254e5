// SPDX-License-Identifier: Apache-2.0
// The mock cuDNN's handle, descriptors and batch normalisation (cudnn_mock.h). Batch norm
// refuses bfloat16 with CUDNN_STATUS_NOT_SUPPORTED, as a cuDNN without it does, so that
// the plugin's float32 fallback runs too; everything else it computes in double.
#include "cudnn_mock.h"

#include <cmath>
#include <vector>

using namespace cudnn_mock;

namespace {

// A descriptor's destruction, shared by every kind.
template <typename T>
cudnnStatus_t destroy(T *d)
{
    delete d;
    return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t create(T **d)
{
    if (d == nullptr)
        return CUDNN_STATUS_BAD_PARAM;
    *d = new T();
    return CUDNN_STATUS_SUCCESS;
}

// Same dims and format: the same offset holds an element in both.
bool same_shape(const cudnnTensorStruct &a, const cudnnTensorStruct &b)
{
    return a.format == b.format && a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

// The batch-norm calls' common checks: spatial modes only, x and its partner alike, the
// parameters (1, C, 1, 1) float32, bfloat16 refused (see above).
cudnnStatus_t check_norm(cudnnBatchNormMode_t mode, const cudnnTensorStruct *x,
                         const cudnnTensorStruct *y, const cudnnTensorStruct *param,
                         double epsilon)
{
    if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return CUDNN_STATUS_NOT_SUPPORTED;
    if (!usable(x) || !usable(y) || !usable(param) || !same_shape(*x, *y) ||
        x->type != y->type || param->type != CUDNN_DATA_FLOAT || param->n != 1 ||
        param->c != x->c || param->h != 1 || param->w != 1 || epsilon < CUDNN_BN_MIN_EPSILON)
        return CUDNN_STATUS_BAD_PARAM;
    if (x->type == CUDNN_DATA_BFLOAT16)
        return CUDNN_STATUS_NOT_SUPPORTED;
    return CUDNN_STATUS_SUCCESS;
}

// Calls f(offset) for every element of channel c.
template <typename F>
void for_channel(const cudnnTensorStruct &t, int c, F &&f)
{
    for (int n = 0; n < t.n; ++n)
        for (int h = 0; h < t.h; ++h)
            for (int w = 0; w < t.w; ++w)
                f(offset(t, n, c, h, w));
}

const float *floats(const void *p) { return static_cast<const float *>(p); }
float *floats(void *p) { return static_cast<float *>(p); }

} // namespace

extern "C" {

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS (mock): another error";
    }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) { return create(handle); }
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) { return destroy(handle); }
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    handle->stream = stream; // every call runs at once, in the order of the calls
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return destroy(d); }
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w)
{
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0 ||
        (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC))
        return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnTensorStruct{type, format, n, c, h, w, true};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return destroy(d); }
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int r, int s)
{
    if (k <= 0 || c <= 0 || r <= 0 || s <= 0 ||
        (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC))
        return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnFilterStruct{type, format, k, c, r, s, true};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d)
{
    return create(d);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d)
{
    return destroy(d);
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute)
{
    if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    d->pad_h = pad_h;
    d->pad_w = pad_w;
    d->stride_h = u;
    d->stride_w = v;
    d->dilation_h = dilation_h;
    d->dilation_w = dilation_w;
    d->mode = mode;
    d->compute = compute;
    d->set = true;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups)
{
    if (groups <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math)
{
    d->math = math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) { return destroy(d); }
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t, int window_h, int window_w,
                                          int pad_h, int pad_w, int stride_h, int stride_w)
{
    if (window_h <= 0 || window_w <= 0 || pad_h < 0 || pad_w < 0 || stride_h <= 0 ||
        stride_w <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnPoolingStruct{mode, window_h, window_w, pad_h, pad_w, stride_h, stride_w, true};
    return CUDNN_STATUS_SUCCESS;
}

// y = alpha * (scale (x - mean) / sqrt(var + epsilon) + bias) + beta * y with the batch's
// mean and biased variance; the running statistics move by the factor, the variance's
// unbiased (cuDNN's documented update); save_invstd = 1 / sqrt(var + epsilon).
cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t x_desc, const void *x, const cudnnTensorDescriptor_t y_desc,
    void *y, const cudnnTensorDescriptor_t param_desc, const void *scale, const void *bias,
    double factor, void *running_mean, void *running_var, double epsilon, void *save_mean,
    void *save_invstd)
{
    if (cudnnStatus_t rc = check_norm(mode, x_desc, y_desc, param_desc, epsilon))
        return rc;
    const cudnnTensorStruct &t = *x_desc;
    const double m = double(t.n) * t.h * t.w;
    for (int c = 0; c < t.c; ++c) {
        double sum = 0, sq = 0;
        for_channel(t, c, [&](int64_t i) { sum += load(t.type, x, i); });
        const double mean = sum / m;
        for_channel(t, c, [&](int64_t i) {
            const double d = load(t.type, x, i) - mean;
            sq += d * d;
        });
        const double var = sq / m, invstd = 1.0 / std::sqrt(var + epsilon);
        const double a = floats(scale)[c] * invstd, b = floats(bias)[c];
        for_channel(t, c, [&](int64_t i) {
            blend(y_desc->type, y, i,
                  a * (load(t.type, x, i) - mean) + b, alpha, beta);
        });
        if (running_mean != nullptr)
            floats(running_mean)[c] = float((1 - factor) * floats(running_mean)[c] + factor * mean);
        if (running_var != nullptr)
            floats(running_var)[c] = float((1 - factor) * floats(running_var)[c] +
                                           factor * var * (m > 1 ? m / (m - 1) : 1.0));
        if (save_mean != nullptr)
            floats(save_mean)[c] = float(mean);
        if (save_invstd != nullptr)
            floats(save_invstd)[c] = float(invstd);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t x_desc, const void *x, const cudnnTensorDescriptor_t y_desc,
    void *y, const cudnnTensorDescriptor_t param_desc, const void *scale, const void *bias,
    const void *mean, const void *var, double epsilon)
{
    if (cudnnStatus_t rc = check_norm(mode, x_desc, y_desc, param_desc, epsilon))
        return rc;
    const cudnnTensorStruct &t = *x_desc;
    for (int c = 0; c < t.c; ++c) {
        const double a = floats(scale)[c] / std::sqrt(double(floats(var)[c]) + epsilon);
        const double mu = floats(mean)[c], b = floats(bias)[c];
        for_channel(t, c, [&](int64_t i) {
            blend(y_desc->type, y, i, a * (load(t.type, x, i) - mu) + b, alpha, beta);
        });
    }
    return CUDNN_STATUS_SUCCESS;
}

// dx = alpha_data * scale invstd (dy - mean(dy) - xhat mean(dy xhat)) + beta_data * dx,
// dscale = alpha_param * sum(dy xhat) + beta_param * dscale, dbias likewise with sum(dy);
// the saved statistics when given, else the batch's own.
cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t, cudnnBatchNormMode_t mode, const void *alpha_data, const void *beta_data,
    const void *alpha_param, const void *beta_param, const cudnnTensorDescriptor_t x_desc,
    const void *x, const cudnnTensorDescriptor_t dy_desc, const void *dy,
    const cudnnTensorDescriptor_t dx_desc, void *dx, const cudnnTensorDescriptor_t param_desc,
    const void *scale, void *dscale, void *dbias, double epsilon, const void *saved_mean,
    const void *saved_invstd)
{
    if (cudnnStatus_t rc = check_norm(mode, x_desc, dx_desc, param_desc, epsilon))
        return rc;
    if (!usable(dy_desc) || !same_shape(*x_desc, *dy_desc) || dy_desc->type != x_desc->type)
        return CUDNN_STATUS_BAD_PARAM;
    const cudnnTensorStruct &t = *x_desc;
    const double m = double(t.n) * t.h * t.w;
    const float ap = *floats(alpha_param), bp = *floats(beta_param);
    for (int c = 0; c < t.c; ++c) {
        double mean, invstd;
        if (saved_mean != nullptr && saved_invstd != nullptr) {
            mean = floats(saved_mean)[c];
            invstd = floats(saved_invstd)[c];
        } else {
            double sum = 0, sq = 0;
            for_channel(t, c, [&](int64_t i) { sum += load(t.type, x, i); });
            mean = sum / m;
            for_channel(t, c, [&](int64_t i) {
                const double d = load(t.type, x, i) - mean;
                sq += d * d;
            });
            invstd = 1.0 / std::sqrt(sq / m + epsilon);
        }
        double sum_dy = 0, sum_dy_xhat = 0;
        for_channel(t, c, [&](int64_t i) {
            const double g = load(t.type, dy, i);
            sum_dy += g;
            sum_dy_xhat += g * (load(t.type, x, i) - mean) * invstd;
        });
        const double a = floats(scale)[c] * invstd;
        for_channel(t, c, [&](int64_t i) {
            const double xhat = (load(t.type, x, i) - mean) * invstd;
            blend(dx_desc->type, dx, i,
                  a * (load(t.type, dy, i) - sum_dy / m - xhat * sum_dy_xhat / m), alpha_data,
                  beta_data);
        });
        floats(dscale)[c] = float(ap * sum_dy_xhat + (bp == 0 ? 0.0 : bp * floats(dscale)[c]));
        floats(dbias)[c] = float(ap * sum_dy + (bp == 0 ? 0.0 : bp * floats(dbias)[c]));
    }
    return CUDNN_STATUS_SUCCESS;
}

// db[k] = alpha * sum of dy over every (n, h, w) of channel k + beta * db[k].
cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t, const void *alpha,
                                           const cudnnTensorDescriptor_t dy_desc, const void *dy,
                                           const void *beta, const cudnnTensorDescriptor_t db_desc,
                                           void *db)
{
    if (!usable(dy_desc) || !usable(db_desc) || db_desc->c != dy_desc->c || db_desc->n != 1 ||
        db_desc->h != 1 || db_desc->w != 1)
        return CUDNN_STATUS_BAD_PARAM;
    if (db_desc->type != dy_desc->type)
        return CUDNN_STATUS_NOT_SUPPORTED; // one dtype, as cuDNN sums
    for (int c = 0; c < dy_desc->c; ++c) {
        double sum = 0;
        for_channel(*dy_desc, c, [&](int64_t i) { sum += load(dy_desc->type, dy, i); });
        blend(db_desc->type, db, c, sum, alpha, beta);
    }
    return CUDNN_STATUS_SUCCESS;
}

} // extern "C"

// SPDX-License-Identifier: Apache-2.0
// dt_compute_* for matmul and the element-wise operations: add, axpby, scale, bias and
// its gradient, ReLU and its gradient.
#include "compute/handle.h"

#include "runtime/error.h"

using dt::capi::guard;
using namespace dt::compute;

namespace {

void require_matmul_dtype(const char *fn, const char *what, dt_dtype_t dtype)
{
    if (dtype != DT_FLOAT32 && dtype != DT_BFLOAT16 && dtype != DT_FLOAT16)
        dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": ", what, " ", static_cast<int>(dtype),
                        " (", dt_dtype_name(dtype), ") is not float32, bfloat16 or float16");
}

// (N, C) or (N, C, H, W) activations and their channel count.
int64_t channels_of(const char *fn, const char *what, const dtp_tensor_t &t)
{
    require_ndims(fn, what, t, 2, 4);
    return t.dims[1];
}

} // namespace

extern "C" {

DT_API dt_status_t dt_compute_matmul(dt_compute_h compute, dt_dtype_t dtype,
                                     dt_dtype_t c_dtype, int trans_a, int trans_b,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const void *a, const void *b, float beta, void *c)
{
    return guard([&] {
        const char *fn = "dt_compute_matmul";
        ComputeContext &ctx = context(compute, fn);
        require_matmul_dtype(fn, "dtype", dtype);
        require_matmul_dtype(fn, "c_dtype", c_dtype);
        if (c_dtype != dtype && c_dtype != DT_FLOAT32)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": c_dtype ", dt_dtype_name(c_dtype),
                            " must be dtype (", dt_dtype_name(dtype), ") or float32");
        if (m <= 0 || n <= 0 || k <= 0)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": m, n, k = ", m, ", ", n, ", ", k,
                            "; each must be > 0");
        require_ptr(fn, "a", a);
        require_ptr(fn, "b", b);
        require_ptr(fn, "c", c);
        ctx.call(fn, ctx.ops().matmul, static_cast<int32_t>(dtype),
                 static_cast<int32_t>(c_dtype), int32_t{trans_a != 0}, int32_t{trans_b != 0},
                 m, n, k, alpha, a, b, beta, c);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_add(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                  const void *a, const void *b, void *c)
{
    return guard([&] {
        const char *fn = "dt_compute_add";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "a", a);
        require_ptr(fn, "b", b);
        require_ptr(fn, "c", c);
        ctx.call(fn, ctx.ops().add, static_cast<const dtp_tensor_t *>(&t), a, b, c);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_axpby(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                    float alpha, const void *x, float beta, void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_axpby";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "x", x);
        require_ptr(fn, "y", y);
        ctx.call(fn, ctx.ops().axpby, static_cast<const dtp_tensor_t *>(&t), alpha, x, beta,
                 y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_scale(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                    float alpha, void *x)
{
    return guard([&] {
        const char *fn = "dt_compute_scale";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "x", x);
        ctx.call(fn, ctx.ops().scale, static_cast<const dtp_tensor_t *>(&t), alpha, x);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_bias_add(dt_compute_h compute, const dt_tensor_desc_t *y_desc,
                                       void *y, const dt_tensor_desc_t *bias_desc,
                                       const void *bias)
{
    return guard([&] {
        const char *fn = "dt_compute_bias_add";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t yt = tensor(fn, "y_desc", y_desc);
        dtp_tensor_t bt = tensor(fn, "bias_desc", bias_desc);
        require_channels(fn, "bias_desc", bt, channels_of(fn, "y_desc", yt));
        require_ptr(fn, "y", y);
        require_ptr(fn, "bias", bias);
        ctx.call(fn, ctx.ops().bias_add, static_cast<const dtp_tensor_t *>(&yt), y,
                 static_cast<const float *>(bias));
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_bias_backward(dt_compute_h compute,
                                            const dt_tensor_desc_t *dy_desc, const void *dy,
                                            const dt_tensor_desc_t *dbias_desc, void *dbias)
{
    return guard([&] {
        const char *fn = "dt_compute_bias_backward";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t yt = tensor(fn, "dy_desc", dy_desc);
        dtp_tensor_t bt = tensor(fn, "dbias_desc", dbias_desc);
        require_channels(fn, "dbias_desc", bt, channels_of(fn, "dy_desc", yt));
        require_ptr(fn, "dy", dy);
        require_ptr(fn, "dbias", dbias);
        ctx.call(fn, ctx.ops().bias_backward, static_cast<const dtp_tensor_t *>(&yt), dy,
                 static_cast<float *>(dbias));
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_relu_forward(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                           const void *x, void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_relu_forward";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "x", x);
        require_ptr(fn, "y", y);
        ctx.call(fn, ctx.ops().relu_forward, static_cast<const dtp_tensor_t *>(&t), x, y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_relu_backward(dt_compute_h compute,
                                            const dt_tensor_desc_t *desc, const void *x,
                                            const void *dy, void *dx)
{
    return guard([&] {
        const char *fn = "dt_compute_relu_backward";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "x", x);
        require_ptr(fn, "dy", dy);
        require_ptr(fn, "dx", dx);
        ctx.call(fn, ctx.ops().relu_backward, static_cast<const dtp_tensor_t *>(&t), x, dy,
                 dx);
        return DT_OK;
    });
}

} // extern "C"

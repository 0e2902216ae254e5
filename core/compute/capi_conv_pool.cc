// SPDX-License-Identifier: Apache-2.0
// dt_compute_* for convolution and pooling: every shape is checked against the geometry
// here, so plugins receive consistent tensors only.
#include "compute/handle.h"

#include "runtime/error.h"

using dt::capi::guard;
using namespace dt::compute;

namespace {

std::string conv_why(const char *x_what, const dtp_tensor_t &x, const dtp_tensor_t &w)
{
    return dt::cat("convolving ", x_what, " ", describe(x), " with w ", describe(w));
}

// The optional bias of the convolution forward / backward-weights.
const float *optional_bias(const char *fn, const char *what, const dt_tensor_desc_t *desc,
                           const void *bias, int64_t channels)
{
    if (bias == nullptr && desc == nullptr)
        return nullptr;
    require_ptr(fn, what, bias);
    dtp_tensor_t b = tensor(fn, "bias_desc", desc);
    require_channels(fn, "bias_desc", b, channels);
    return static_cast<const float *>(bias);
}

// What every pooling entry point checks: the geometry, x and y in its layout, y of the
// shape that pooling x gives, and a layout the plugin takes.
struct Pooling {
    dtp_pool_t g;
    dtp_tensor_t xt;
    dtp_tensor_t yt;
};

Pooling checked_pooling(const char *fn, ComputeContext &c, const dt_pool_params_t *p,
                        const dt_tensor_desc_t *x_desc, const dt_tensor_desc_t *y_desc)
{
    Pooling a{pool_geometry(fn, p), {}, {}};
    a.xt = activation(fn, "x_desc", x_desc, a.g.layout);
    a.yt = activation(fn, "y_desc", y_desc, a.g.layout);
    require_shape(fn, "y_desc", a.yt, pool_output(fn, a.g, a.xt), "pooling x");
    c.require_layout(fn, a.g.layout);
    return a;
}

} // namespace

extern "C" {

DT_API dt_status_t dt_compute_conv_forward(dt_compute_h compute, const dt_conv_params_t *p,
                                           const dt_tensor_desc_t *x_desc, const void *x,
                                           const dt_tensor_desc_t *w_desc, const void *w,
                                           const dt_tensor_desc_t *bias_desc,
                                           const void *bias,
                                           const dt_tensor_desc_t *y_desc, void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_conv_forward";
        ComputeContext &c = context(compute, fn);
        dtp_conv_t g = conv_geometry(fn, p);
        dtp_tensor_t xt = activation(fn, "x_desc", x_desc, g.layout);
        dtp_tensor_t wt = tensor(fn, "w_desc", w_desc);
        dtp_tensor_t yt = activation(fn, "y_desc", y_desc, g.layout);
        require_shape(fn, "y_desc", yt, conv_output(fn, g, xt, wt), conv_why("x", xt, wt));
        c.require_layout(fn, g.layout);
        c.require_dtypes(fn, xt, wt);
        const float *b = optional_bias(fn, "bias", bias_desc, bias, wt.dims[0]);
        require_ptr(fn, "x", x);
        require_ptr(fn, "w", w);
        require_ptr(fn, "y", y);
        c.call(fn, c.ops().conv_forward, static_cast<const dtp_conv_t *>(&g),
               static_cast<const dtp_tensor_t *>(&xt), x,
               static_cast<const dtp_tensor_t *>(&wt), w, b,
               static_cast<const dtp_tensor_t *>(&yt), y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_conv_backward_data(dt_compute_h compute,
                                                 const dt_conv_params_t *p,
                                                 const dt_tensor_desc_t *w_desc, const void *w,
                                                 const dt_tensor_desc_t *dy_desc,
                                                 const void *dy,
                                                 const dt_tensor_desc_t *dx_desc, void *dx)
{
    return guard([&] {
        const char *fn = "dt_compute_conv_backward_data";
        ComputeContext &c = context(compute, fn);
        dtp_conv_t g = conv_geometry(fn, p);
        dtp_tensor_t wt = tensor(fn, "w_desc", w_desc);
        dtp_tensor_t yt = activation(fn, "dy_desc", dy_desc, g.layout);
        dtp_tensor_t xt = activation(fn, "dx_desc", dx_desc, g.layout);
        require_shape(fn, "dy_desc", yt, conv_output(fn, g, xt, wt, "dx_desc"),
                      conv_why("dx", xt, wt));
        c.require_layout(fn, g.layout);
        c.require_dtypes(fn, xt, wt);
        require_ptr(fn, "w", w);
        require_ptr(fn, "dy", dy);
        require_ptr(fn, "dx", dx);
        c.call(fn, c.ops().conv_backward_data, static_cast<const dtp_conv_t *>(&g),
               static_cast<const dtp_tensor_t *>(&wt), w,
               static_cast<const dtp_tensor_t *>(&yt), dy,
               static_cast<const dtp_tensor_t *>(&xt), dx);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_conv_backward_weights(
    dt_compute_h compute, const dt_conv_params_t *p, const dt_tensor_desc_t *x_desc,
    const void *x, const dt_tensor_desc_t *dy_desc, const void *dy,
    const dt_tensor_desc_t *dw_desc, void *dw, const dt_tensor_desc_t *dbias_desc, void *dbias)
{
    return guard([&] {
        const char *fn = "dt_compute_conv_backward_weights";
        ComputeContext &c = context(compute, fn);
        dtp_conv_t g = conv_geometry(fn, p);
        dtp_tensor_t xt = activation(fn, "x_desc", x_desc, g.layout);
        dtp_tensor_t yt = activation(fn, "dy_desc", dy_desc, g.layout);
        dtp_tensor_t wt = tensor(fn, "dw_desc", dw_desc);
        require_shape(fn, "dy_desc", yt, conv_output(fn, g, xt, wt, "x_desc", "dw_desc"),
                      conv_why("x", xt, wt));
        c.require_layout(fn, g.layout);
        c.require_dtypes(fn, xt, wt);
        auto *b = const_cast<float *>(optional_bias(fn, "dbias", dbias_desc, dbias, wt.dims[0]));
        require_ptr(fn, "x", x);
        require_ptr(fn, "dy", dy);
        require_ptr(fn, "dw", dw);
        c.call(fn, c.ops().conv_backward_weights, static_cast<const dtp_conv_t *>(&g),
               static_cast<const dtp_tensor_t *>(&xt), x,
               static_cast<const dtp_tensor_t *>(&yt), dy,
               static_cast<const dtp_tensor_t *>(&wt), dw, b);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_pool_workspace_size(dt_compute_h compute,
                                                  const dt_pool_params_t *p,
                                                  const dt_tensor_desc_t *x_desc,
                                                  const dt_tensor_desc_t *y_desc, size_t *bytes)
{
    return guard([&] {
        const char *fn = "dt_compute_pool_workspace_size";
        ComputeContext &c = context(compute, fn);
        const auto [g, xt, yt] = checked_pooling(fn, c, p, x_desc, y_desc);
        require_ptr(fn, "bytes", bytes);
        size_t n = 0;
        if (c.ops().pool_workspace_size != nullptr)
            c.call(fn, c.ops().pool_workspace_size, &g, &xt, &yt, &n);
        *bytes = n;
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_pool_forward(dt_compute_h compute, const dt_pool_params_t *p,
                                           const dt_tensor_desc_t *x_desc, const void *x,
                                           const dt_tensor_desc_t *y_desc, void *y,
                                           void *workspace)
{
    return guard([&] {
        const char *fn = "dt_compute_pool_forward";
        ComputeContext &c = context(compute, fn);
        const auto [g, xt, yt] = checked_pooling(fn, c, p, x_desc, y_desc);
        require_ptr(fn, "x", x);
        require_ptr(fn, "y", y);
        c.call(fn, c.ops().pool_forward, &g, &xt, x, &yt, y, workspace);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_pool_backward(dt_compute_h compute, const dt_pool_params_t *p,
                                            const dt_tensor_desc_t *x_desc, const void *x,
                                            const dt_tensor_desc_t *y_desc, const void *y,
                                            const void *dy, void *dx, const void *workspace)
{
    return guard([&] {
        const char *fn = "dt_compute_pool_backward";
        ComputeContext &c = context(compute, fn);
        const auto [g, xt, yt] = checked_pooling(fn, c, p, x_desc, y_desc);
        require_ptr(fn, "dy", dy);
        require_ptr(fn, "dx", dx);
        c.call(fn, c.ops().pool_backward, &g, &xt, x, &yt, y, dy, dx, workspace);
        return DT_OK;
    });
}

} // extern "C"

// SPDX-License-Identifier: Apache-2.0
#include "compute/tensor_check.h"

#include "runtime/enum_value.h"
#include "runtime/error.h"

#include <limits>

namespace dt::compute {

namespace {

const char *dtype_label(int32_t dtype)
{
    return dt_dtype_name(static_cast<dt_dtype_t>(dtype));
}

std::string dims_string(const dtp_tensor_t &t)
{
    std::string out = "(";
    for (int i = 0; i < t.ndims; ++i)
        out += (i ? ", " : "") + std::to_string(t.dims[i]);
    return out + ")";
}

dtp_tensor_t convert(const char *function, const char *what, const dt_tensor_desc_t *desc,
                     bool allow_int32)
{
    require_ptr(function, what, desc);
    const int d = enum_value(desc->dtype); // a C caller may pass any value
    const bool floating = d == DT_FLOAT32 || d == DT_BFLOAT16 || d == DT_FLOAT16;
    if (!floating && !(allow_int32 && d == DT_INT32))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " has dtype ", d, " (",
                    dtype_label(d), "); compute operations take float32, "
                    "bfloat16 or float16", allow_int32 ? " (or int32 here)" : "");
    if (desc->ndims < 1 || desc->ndims > DT_TENSOR_MAX_DIMS)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " has ndims ", desc->ndims,
                    "; tensors have 1 to ", DT_TENSOR_MAX_DIMS, " dimensions");
    dtp_tensor_t t{};
    t.dtype = d;
    t.ndims = desc->ndims;
    int64_t count = 1;
    for (int i = 0; i < desc->ndims; ++i) {
        if (desc->dims[i] <= 0)
            throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " has dims[", i,
                        "] = ", desc->dims[i], "; every dimension must be > 0");
        if (count > std::numeric_limits<int64_t>::max() / 8 / desc->dims[i])
            throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what,
                        " has too many elements to address");
        count *= desc->dims[i];
        t.dims[i] = desc->dims[i];
    }
    return t;
}

int32_t at_least(const char *function, const char *what, int32_t value, int32_t min)
{
    if (value < min)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " = ", value,
                    " must be >= ", min);
    return value;
}

} // namespace

std::string describe(const dtp_tensor_t &t)
{
    return dims_string(t) + " " + dtype_label(t.dtype);
}

int64_t elements(const dtp_tensor_t &t)
{
    int64_t n = 1;
    for (int i = 0; i < t.ndims; ++i)
        n *= t.dims[i];
    return n;
}

dtp_tensor_t tensor(const char *function, const char *what, const dt_tensor_desc_t *desc)
{
    return convert(function, what, desc, false);
}

dtp_tensor_t fill_tensor(const char *function, const char *what, const dt_tensor_desc_t *desc)
{
    return convert(function, what, desc, true);
}

void require_ptr(const char *function, const char *what, const void *p)
{
    if (p == nullptr)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " must not be NULL");
}

void require_ndims(const char *function, const char *what, const dtp_tensor_t &t, int ndims,
                   int alt_ndims)
{
    if (t.ndims == ndims || (alt_ndims >= 0 && t.ndims == alt_ndims))
        return;
    if (alt_ndims >= 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(t),
                    "; it must have ", ndims, " or ", alt_ndims, " dimensions");
    throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(t),
                "; it must have ", ndims, " dimensions");
}

void require_same(const char *function, const char *a_what, const dtp_tensor_t &a,
                  const char *b_what, const dtp_tensor_t &b)
{
    bool same = a.dtype == b.dtype && a.ndims == b.ndims;
    for (int i = 0; same && i < a.ndims; ++i)
        same = a.dims[i] == b.dims[i];
    if (!same)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", b_what, " is ", describe(b),
                    " but ", a_what, " is ", describe(a), "; they must match");
}

void require_f32(const char *function, const char *what, const dtp_tensor_t &t)
{
    if (t.dtype != DTP_FLOAT32)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(t),
                    "; it must be float32");
}

void require_channels(const char *function, const char *what, const dtp_tensor_t &t,
                      int64_t channels)
{
    if (t.dtype != DTP_FLOAT32 || elements(t) != channels)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(t),
                    "; it must be float32 with ", channels, " elements (one per channel)");
}

void require_shape(const char *function, const char *what, const dtp_tensor_t &actual,
                   const dtp_tensor_t &expected, const std::string &why)
{
    bool same = actual.dtype == expected.dtype && actual.ndims == expected.ndims;
    for (int i = 0; same && i < actual.ndims; ++i)
        same = actual.dims[i] == expected.dims[i];
    if (!same)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(actual),
                    " but ", why, " gives ", describe(expected));
}

namespace {

int32_t layout_of(const char *function, uint64_t mask, uint64_t bit, int value)
{
    if (!(mask & bit))
        return DTP_LAYOUT_NCHW;
    if (value != DT_LAYOUT_NCHW && value != DT_LAYOUT_NHWC)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": layout ", value,
                    " is unknown; use DT_LAYOUT_NCHW or DT_LAYOUT_NHWC");
    return value == DT_LAYOUT_NHWC ? DTP_LAYOUT_NHWC : DTP_LAYOUT_NCHW;
}

} // namespace

dtp_tensor_t activation(const char *function, const char *what, const dt_tensor_desc_t *desc,
                        int32_t layout)
{
    dtp_tensor_t t = tensor(function, what, desc);
    if (layout != DTP_LAYOUT_NHWC)
        return t;
    if (t.ndims != 4)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " is ", describe(t),
                    " but DT_LAYOUT_NHWC needs a 4-D (N, H, W, C) descriptor");
    const int64_t c = t.dims[3];
    t.dims[3] = t.dims[2];
    t.dims[2] = t.dims[1];
    t.dims[1] = c;
    return t;
}

dtp_conv_t conv_geometry(const char *function, const dt_conv_params_t *p)
{
    dtp_conv_t g{{1, 1}, {0, 0}, {1, 1}, 1, 0};
    const uint64_t mask = p != nullptr ? p->field_mask : 0;
    for (int i = 0; i < 2; ++i) {
        if (mask & DT_CONV_PARAM_FIELD_STRIDE)
            g.stride[i] = at_least(function, "stride", p->stride[i], 1);
        if (mask & DT_CONV_PARAM_FIELD_PADDING)
            g.padding[i] = at_least(function, "padding", p->padding[i], 0);
        if (mask & DT_CONV_PARAM_FIELD_DILATION)
            g.dilation[i] = at_least(function, "dilation", p->dilation[i], 1);
    }
    if (mask & DT_CONV_PARAM_FIELD_GROUPS)
        g.groups = at_least(function, "groups", p->groups, 1);
    g.layout = layout_of(function, mask, DT_CONV_PARAM_FIELD_LAYOUT,
                         (mask & DT_CONV_PARAM_FIELD_LAYOUT) ? enum_value(p->layout) : 0);
    return g;
}

dtp_tensor_t conv_output(const char *function, const dtp_conv_t &g, const dtp_tensor_t &x,
                         const dtp_tensor_t &w, const char *x_what, const char *w_what)
{
    require_ndims(function, "x_desc", x, 4);
    require_ndims(function, "w_desc", w, 4);
    // bfloat16 activations may meet the float32 master weights (the plugin converts the
    // weights, not the user): mixed-precision training keeps weights in float32.
    const bool mixed = x.dtype == DTP_BFLOAT16 && w.dtype == DTP_FLOAT32;
    if (w.dtype != x.dtype && !mixed)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", w_what, " is ", describe(w),
                    " but ", x_what, " is ", describe(x),
                    "; the weights must share the activations' dtype, or be float32 with "
                    "bfloat16 activations");
    if (x.dims[1] % g.groups != 0 || w.dims[0] % g.groups != 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": groups = ", g.groups,
                    " must divide the input channels (", x.dims[1],
                    ") and the output channels (", w.dims[0], ")");
    if (w.dims[1] != x.dims[1] / g.groups)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": w_desc is ", describe(w),
                    " but x_desc ", describe(x), " with groups = ", g.groups,
                    " needs w.dims[1] = ", x.dims[1] / g.groups,
                    " (weights are O, I / groups, KH, KW)");
    dtp_tensor_t y{};
    y.dtype = x.dtype;
    y.ndims = 4;
    y.dims[0] = x.dims[0];
    y.dims[1] = w.dims[0];
    for (int i = 0; i < 2; ++i) {
        int64_t span = int64_t{g.dilation[i]} * (w.dims[2 + i] - 1) + 1;
        int64_t padded = x.dims[2 + i] + 2 * int64_t{g.padding[i]};
        if (padded < span)
            throw_error(DT_ERR_INVALID_ARGUMENT, function, ": the kernel ", describe(w),
                        " with dilation ", g.dilation[i], " spans ", span, " but the ",
                        i == 0 ? "height" : "width", " of x ", describe(x), " padded by ",
                        g.padding[i], " is only ", padded);
        y.dims[2 + i] = (padded - span) / g.stride[i] + 1;
    }
    return y;
}

dtp_pool_t pool_geometry(const char *function, const dt_pool_params_t *p)
{
    require_ptr(function, "p", p);
    if (!(p->field_mask & DT_POOL_PARAM_FIELD_KIND) || !(p->field_mask & DT_POOL_PARAM_FIELD_KERNEL))
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": dt_pool_params_t needs kind and "
                    "kernel (set DT_POOL_PARAM_FIELD_KIND and DT_POOL_PARAM_FIELD_KERNEL)");
    const int kind = enum_value(p->kind);
    if (kind != DT_POOL_MAX && kind != DT_POOL_AVG_INCLUDE_PADDING &&
        kind != DT_POOL_AVG_EXCLUDE_PADDING)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": pool kind ", kind,
                    " is unknown; use DT_POOL_MAX or DT_POOL_AVG_*");
    dtp_pool_t g{};
    g.kind = kind;
    for (int i = 0; i < 2; ++i) {
        g.kernel[i] = at_least(function, "kernel", p->kernel[i], 1);
        g.stride[i] = (p->field_mask & DT_POOL_PARAM_FIELD_STRIDE)
                          ? at_least(function, "stride", p->stride[i], 1)
                          : g.kernel[i];
        g.padding[i] = (p->field_mask & DT_POOL_PARAM_FIELD_PADDING)
                           ? at_least(function, "padding", p->padding[i], 0)
                           : 0;
        if (g.padding[i] * 2 > g.kernel[i])
            throw_error(DT_ERR_INVALID_ARGUMENT, function, ": padding ", g.padding[i],
                        " must be at most half the kernel (", g.kernel[i], ")");
    }
    g.layout = layout_of(function, p->field_mask, DT_POOL_PARAM_FIELD_LAYOUT,
                         (p->field_mask & DT_POOL_PARAM_FIELD_LAYOUT) ? enum_value(p->layout)
                                                                     : 0);
    return g;
}

dtp_tensor_t pool_output(const char *function, const dtp_pool_t &g, const dtp_tensor_t &x)
{
    require_ndims(function, "x_desc", x, 4);
    dtp_tensor_t y = x;
    for (int i = 0; i < 2; ++i) {
        int64_t padded = x.dims[2 + i] + 2 * int64_t{g.padding[i]};
        if (padded < g.kernel[i])
            throw_error(DT_ERR_INVALID_ARGUMENT, function, ": the pooling kernel ",
                        g.kernel[i], " is larger than the ", i == 0 ? "height" : "width",
                        " of x ", describe(x), " padded by ", g.padding[i]);
        y.dims[2 + i] = (padded - g.kernel[i]) / g.stride[i] + 1;
    }
    return y;
}

} // namespace dt::compute

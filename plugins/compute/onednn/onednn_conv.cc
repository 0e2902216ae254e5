// Convolution forward, backward-data and backward-weights with oneDNN primitives that
// choose their own layouts (format any); Slot reorders between them and the user's NCHW
// / OIHW. Each direction is cached by shapes and geometry.
#include "onednn_context.h"
#include "onednn_ops.h"
#include "onednn_slot.h"

namespace dtp::onednn {

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;

struct Geometry {
    dnnl::memory::dims strides, dilates, pad;
};

Geometry geometry(const dtp_conv_t &p)
{
    return {{p.stride[0], p.stride[1]},
            {p.dilation[0] - 1, p.dilation[1] - 1},
            {p.padding[0], p.padding[1]}};
}

// The user's OIHW weights, or GOIHW when grouped (the same bytes).
md weights_user(const dtp_tensor_t &w, int groups, dnnl::memory::data_type type)
{
    if (groups == 1)
        return plain_desc(w, type);
    return md({groups, w.dims[0] / groups, w.dims[1], w.dims[2], w.dims[3]}, type, tag::goihw);
}

md weights_any(const dtp_tensor_t &w, int groups, dnnl::memory::data_type type)
{
    if (groups == 1)
        return md({w.dims[0], w.dims[1], w.dims[2], w.dims[3]}, type, tag::any);
    return md({groups, w.dims[0] / groups, w.dims[1], w.dims[2], w.dims[3]}, type, tag::any);
}

md any_like(const dtp_tensor_t &t, dnnl::memory::data_type type)
{
    return md({t.dims[0], t.dims[1], t.dims[2], t.dims[3]}, type, tag::any);
}

std::string conv_key(const char *op, const dtp_conv_t &p, const dtp_tensor_t &x,
                     const dtp_tensor_t &w, bool bias)
{
    return std::string(op) + "|" + key_of(x) + "|" + key_of(w) + "|" +
           std::to_string(p.stride[0]) + "," + std::to_string(p.stride[1]) + "," +
           std::to_string(p.padding[0]) + "," + std::to_string(p.padding[1]) + "," +
           std::to_string(p.dilation[0]) + "," + std::to_string(p.dilation[1]) + "," +
           std::to_string(p.groups) + (bias ? "|b" : "");
}

// The forward description every direction starts from (backward needs it as a hint).
dnnl::convolution_forward::primitive_desc forward_pd(const Instance &in, const dtp_conv_t &p,
                                                     const dtp_tensor_t &x,
                                                     const dtp_tensor_t &w,
                                                     const dtp_tensor_t &y, bool bias)
{
    const auto work = compute_type(in, x.dtype);
    const Geometry g = geometry(p);
    md bias_md = bias ? md({w.dims[0]}, dnnl::memory::data_type::f32, tag::a) : md();
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, any_like(x, work),
                                      weights_any(w, p.groups, work), bias_md,
                                      any_like(y, work), g.strides, g.dilates, g.pad, g.pad);
    return dnnl::convolution_forward::primitive_desc(d, in.engine);
}

struct ForwardEntry : CacheEntry {
    dnnl::convolution_forward prim;
    Slot src, weights, dst;
    md bias;
};

struct BackwardDataEntry : CacheEntry {
    dnnl::convolution_backward_data prim;
    Slot weights, diff_dst, diff_src;
};

struct BackwardWeightsEntry : CacheEntry {
    dnnl::convolution_backward_weights prim;
    Slot src, diff_dst, diff_weights;
    md diff_bias;
};

} // namespace

int32_t conv_forward(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *w_desc, const void *w, const float *bias,
                     const dtp_tensor_t *y_desc, void *y)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        const bool has_bias = bias != nullptr;
        auto &e = in.cache.get<ForwardEntry>(
            conv_key("conv_fwd", *p, *x_desc, *w_desc, has_bias), [&] {
                auto pd = forward_pd(in, *p, *x_desc, *w_desc, *y_desc, has_bias);
                auto out = std::make_unique<ForwardEntry>();
                out->prim = dnnl::convolution_forward(pd);
                out->src = Slot(in, plain_desc(*x_desc), pd.src_desc(), false);
                out->weights = Slot(in, weights_user(*w_desc, p->groups, dnnl_type(w_desc->dtype)),
                                    pd.weights_desc(), false);
                out->dst = Slot(in, plain_desc(*y_desc), pd.dst_desc(), true);
                if (has_bias)
                    out->bias = pd.bias_desc();
                return out;
            });
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, e.src.input(in, x)},
            {DNNL_ARG_WEIGHTS, e.weights.input(in, w)},
            {DNNL_ARG_DST, e.dst.output(in, y)}};
        if (has_bias)
            args.emplace(DNNL_ARG_BIAS,
                         dnnl::memory(e.bias, in.engine, const_cast<float *>(bias)));
        e.prim.execute(in.stream, args);
        e.dst.finish(in, y);
        in.stream.wait();
    });
}

int32_t conv_backward_data(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                           const void *w, const dtp_tensor_t *dy_desc, const void *dy,
                           const dtp_tensor_t *dx_desc, void *dx)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        auto &e = in.cache.get<BackwardDataEntry>(
            conv_key("conv_bwd_data", *p, *dx_desc, *w_desc, false), [&] {
                auto hint = forward_pd(in, *p, *dx_desc, *w_desc, *dy_desc, false);
                const auto work = compute_type(in, dx_desc->dtype);
                const Geometry g = geometry(*p);
                dnnl::convolution_backward_data::desc d(
                    dnnl::algorithm::convolution_direct, any_like(*dx_desc, work),
                    weights_any(*w_desc, p->groups, work), any_like(*dy_desc, work), g.strides,
                    g.dilates, g.pad, g.pad);
                dnnl::convolution_backward_data::primitive_desc pd(d, in.engine, hint);
                auto out = std::make_unique<BackwardDataEntry>();
                out->prim = dnnl::convolution_backward_data(pd);
                out->weights = Slot(in, weights_user(*w_desc, p->groups, dnnl_type(w_desc->dtype)),
                                    pd.weights_desc(), false);
                out->diff_dst = Slot(in, plain_desc(*dy_desc), pd.diff_dst_desc(), false);
                out->diff_src = Slot(in, plain_desc(*dx_desc), pd.diff_src_desc(), true);
                return out;
            });
        e.prim.execute(in.stream, {{DNNL_ARG_WEIGHTS, e.weights.input(in, w)},
                                   {DNNL_ARG_DIFF_DST, e.diff_dst.input(in, dy)},
                                   {DNNL_ARG_DIFF_SRC, e.diff_src.output(in, dx)}});
        e.diff_src.finish(in, dx);
        in.stream.wait();
    });
}

int32_t conv_backward_weights(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                              const void *x, const dtp_tensor_t *dy_desc, const void *dy,
                              const dtp_tensor_t *dw_desc, void *dw, float *dbias)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        const bool has_bias = dbias != nullptr;
        auto &e = in.cache.get<BackwardWeightsEntry>(
            conv_key("conv_bwd_weights", *p, *x_desc, *dw_desc, has_bias), [&] {
                auto hint = forward_pd(in, *p, *x_desc, *dw_desc, *dy_desc, has_bias);
                const auto work = compute_type(in, x_desc->dtype);
                const Geometry g = geometry(*p);
                md bias_md = has_bias ? md({dw_desc->dims[0]}, dnnl::memory::data_type::f32,
                                           tag::a)
                                      : md();
                dnnl::convolution_backward_weights::desc d(
                    dnnl::algorithm::convolution_direct, any_like(*x_desc, work),
                    weights_any(*dw_desc, p->groups, work), bias_md, any_like(*dy_desc, work),
                    g.strides, g.dilates, g.pad, g.pad);
                dnnl::convolution_backward_weights::primitive_desc pd(d, in.engine, hint);
                auto out = std::make_unique<BackwardWeightsEntry>();
                out->prim = dnnl::convolution_backward_weights(pd);
                out->src = Slot(in, plain_desc(*x_desc), pd.src_desc(), false);
                out->diff_dst = Slot(in, plain_desc(*dy_desc), pd.diff_dst_desc(), false);
                out->diff_weights =
                    Slot(in, weights_user(*dw_desc, p->groups, dnnl_type(dw_desc->dtype)),
                         pd.diff_weights_desc(), true);
                if (has_bias)
                    out->diff_bias = pd.diff_bias_desc();
                return out;
            });
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, e.src.input(in, x)},
            {DNNL_ARG_DIFF_DST, e.diff_dst.input(in, dy)},
            {DNNL_ARG_DIFF_WEIGHTS, e.diff_weights.output(in, dw)}};
        if (has_bias)
            args.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(e.diff_bias, in.engine, dbias));
        e.prim.execute(in.stream, args);
        e.diff_weights.finish(in, dw);
        in.stream.wait();
    });
}

} // namespace dtp::onednn

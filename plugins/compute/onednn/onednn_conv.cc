// SPDX-License-Identifier: Apache-2.0
// Convolution forward, backward-data and backward-weights with oneDNN primitives that
// choose their own layouts (format any); Slot reorders between them and the user's NCHW
// / OIHW. Large 1x1 convolutions run on NCHW itself instead (plain_1x1). Each direction
// is cached by shapes and geometry. DISTTRAIN_ONEDNN_CONV_LAYOUT=blocked turns the plain
// path off (to compare). Channels-last activations (DTP_LAYOUT_NHWC) are given to the
// primitives as they are: oneDNN has direct kernels on nhwc, so only the weights (once
// per call, small next to the activations) pass through a reorder. An unpadded 1x1
// convolution on NHWC runs as matrix products instead (onednn_conv_gemm.h).
// bfloat16 activations may come with float32 weights (mixed precision):
// the weights are reordered to bfloat16 with the layout change, and the weight gradient
// is computed in float32.
#include "onednn_context.h"
#include "onednn_conv_gemm.h"
#include "onednn_ops.h"
#include "onednn_slot.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <string>

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

// Whether a convolution may run as Winograd F(4x4, 3x3): 3x3, stride 1, undilated,
// ungrouped, float32. oneDNN's convolution_auto then picks its Winograd kernels where its
// heuristics expect them to win (AVX-512, enough channels; forward_choice keeps the direct
// kernel elsewhere); they need its blocked layout, so channels-last activations pass
// through Slot's reorders for these convolutions. Measured on AVX-512 with one thread (resnet50, batch
// 16, `tests/bench/train_vs_torch.py`): see models/README.md. Winograd rounds differently
// from the direct product (a relative error near 1e-5 in float32), so
// DISTTRAIN_ONEDNN_WINOGRAD=0 turns it off.
bool winograd(const Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w, int32_t dtype)
{
    static const char *env = std::getenv("DISTTRAIN_ONEDNN_WINOGRAD");
    if (env != nullptr && std::string(env) == "0")
        return false;
    return compute_type(in, dtype) == dnnl::memory::data_type::f32 && p.groups == 1 &&
           w.dims[2] == 3 && w.dims[3] == 3 && p.stride[0] == 1 && p.stride[1] == 1 &&
           p.dilation[0] == 1 && p.dilation[1] == 1;
}

dnnl::algorithm algorithm_for(bool wino)
{
    return wino ? dnnl::algorithm::convolution_auto : dnnl::algorithm::convolution_direct;
}

// The activations' layout: `any` lets the primitive pick (blocked, reordered from and to
// the user's NCHW by Slot), `plain` is the user's NCHW itself; NHWC is kept, except for a
// Winograd candidate, whose kernels want the blocked layout.
md activation(const dtp_tensor_t &t, const dtp_conv_t &p, dnnl::memory::data_type type,
              bool plain, bool wino)
{
    if (p.layout == DTP_LAYOUT_NHWC && !wino)
        return activation_desc(t, p.layout, type);
    return md({t.dims[0], t.dims[1], t.dims[2], t.dims[3]}, type, plain ? tag::abcd : tag::any);
}

// Whether a direction of a 1x1 convolution runs on plain NCHW, where oneDNN computes it as
// one sgemm per image with no reorder: a 1x1 convolution does so little arithmetic per
// element that the two reorders to and from nChw16c cost as much as the blocked kernel
// saves. Measured on AVX-512 in f32 with one thread (resnet50's shapes), plain won by
// 1.2-2x wherever the plane it reads or writes has >= 28x28 elements (forward: stride 1
// only; strided forward gathers first), and lost on 14x14 and 7x7 planes, where the
// sgemm per image is too thin. `plane` is H x W of the larger activation.
bool plain_1x1(const Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w,
               int32_t dtype, int64_t plane, bool strided_ok)
{
    static const char *env = std::getenv("DISTTRAIN_ONEDNN_CONV_LAYOUT");
    if ((env != nullptr && std::string(env) == "blocked") || p.layout == DTP_LAYOUT_NHWC)
        return false;
    return compute_type(in, dtype) == dnnl::memory::data_type::f32 && p.groups == 1 &&
           w.dims[2] == 1 && w.dims[3] == 1 && p.padding[0] == 0 && p.padding[1] == 0 &&
           (strided_ok || (p.stride[0] == 1 && p.stride[1] == 1)) && plane >= 28 * 28;
}

int64_t plane_of(const dtp_tensor_t &t) { return t.dims[2] * t.dims[3]; }

// bfloat16 activations with float32 (master) weights: the forward and backward-data
// weights pass through a reorder to bfloat16 (the Slot), the weight gradient stays float32.
bool mixed(const dtp_tensor_t &x, const dtp_tensor_t &w)
{
    return x.dtype == DTP_BFLOAT16 && w.dtype == DTP_FLOAT32;
}

std::string conv_key(const char *op, const dtp_conv_t &p, const dtp_tensor_t &x,
                     const dtp_tensor_t &w, bool bias)
{
    return std::string(op) + "|" + key_of(x) + "|" + key_of(w) + "|" +
           std::to_string(p.stride[0]) + "," + std::to_string(p.stride[1]) + "," +
           std::to_string(p.padding[0]) + "," + std::to_string(p.padding[1]) + "," +
           std::to_string(p.dilation[0]) + "," + std::to_string(p.dilation[1]) + "," +
           std::to_string(p.groups) + (bias ? "|b" : "") +
           (p.layout == DTP_LAYOUT_NHWC ? "|nhwc" : "");
}

// The forward description every direction starts from (backward needs it as a hint).
dnnl::convolution_forward::primitive_desc forward_pd(const Instance &in, const dtp_conv_t &p,
                                                     const dtp_tensor_t &x,
                                                     const dtp_tensor_t &w,
                                                     const dtp_tensor_t &y, bool bias, bool wino)
{
    const auto work = compute_type(in, x.dtype);
    const Geometry g = geometry(p);
    md bias_md = bias ? md({w.dims[0]}, dnnl::memory::data_type::f32, tag::a) : md();
    const bool plain = plain_1x1(in, p, w, x.dtype, plane_of(y), false);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, algorithm_for(wino),
                                      activation(x, p, work, plain, wino),
                                      weights_any(w, p.groups, work), bias_md,
                                      activation(y, p, work, plain, wino), g.strides,
                                      g.dilates, g.pad, g.pad);
    return dnnl::convolution_forward::primitive_desc(d, in.engine);
}

// The forward description, and whether it is Winograd: a candidate asks oneDNN to choose
// (convolution_auto); where it chooses a direct kernel instead, the usual description
// (channels-last kept, no reorders) serves. The backward directions follow the choice.
struct ForwardChoice {
    dnnl::convolution_forward::primitive_desc pd;
    bool wino;
};

ForwardChoice forward_choice(const Instance &in, const dtp_conv_t &p, const dtp_tensor_t &x,
                             const dtp_tensor_t &w, const dtp_tensor_t &y, bool bias)
{
    if (winograd(in, p, w, x.dtype)) {
        auto pd = forward_pd(in, p, x, w, y, bias, true);
        if (std::string(pd.impl_info_str()).find("wino") != std::string::npos)
            return {pd, true};
    }
    return {forward_pd(in, p, x, w, y, bias, false), false};
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
        if (nhwc_gemm(in, *p, *w_desc, x_desc->dtype)) {
            gemm_conv_forward(in, *p, *x_desc, static_cast<const float *>(x), *w_desc,
                              static_cast<const float *>(w), bias, *y_desc,
                              static_cast<float *>(y));
            return;
        }
        auto &e = in.cache.get<ForwardEntry>(
            conv_key("conv_fwd", *p, *x_desc, *w_desc, has_bias), [&] {
                auto pd = forward_choice(in, *p, *x_desc, *w_desc, *y_desc, has_bias).pd;
                auto out = std::make_unique<ForwardEntry>();
                out->prim = dnnl::convolution_forward(pd);
                out->src = Slot(in, activation_desc(*x_desc, p->layout), pd.src_desc(), false);
                out->weights = Slot(in, weights_user(*w_desc, p->groups, dnnl_type(w_desc->dtype)),
                                    pd.weights_desc(), false);
                out->dst = Slot(in, activation_desc(*y_desc, p->layout), pd.dst_desc(), true);
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
        if (nhwc_gemm(in, *p, *w_desc, dx_desc->dtype)) {
            gemm_conv_backward_data(in, *p, *w_desc, static_cast<const float *>(w), *dy_desc,
                                    static_cast<const float *>(dy), *dx_desc,
                                    static_cast<float *>(dx));
            return;
        }
        auto &e = in.cache.get<BackwardDataEntry>(
            conv_key("conv_bwd_data", *p, *dx_desc, *w_desc, false), [&] {
                auto [hint, wino] = forward_choice(in, *p, *dx_desc, *w_desc, *dy_desc, false);
                const auto work = compute_type(in, dx_desc->dtype);
                const Geometry g = geometry(*p);
                const bool plain = plain_1x1(in, *p, *w_desc, dx_desc->dtype,
                                             plane_of(*dx_desc), true);
                dnnl::convolution_backward_data::desc d(
                    algorithm_for(wino), activation(*dx_desc, *p, work, plain, wino),
                    weights_any(*w_desc, p->groups, work),
                    activation(*dy_desc, *p, work, plain, wino), g.strides, g.dilates, g.pad,
                    g.pad);
                dnnl::convolution_backward_data::primitive_desc pd(d, in.engine, hint);
                auto out = std::make_unique<BackwardDataEntry>();
                out->prim = dnnl::convolution_backward_data(pd);
                out->weights = Slot(in, weights_user(*w_desc, p->groups, dnnl_type(w_desc->dtype)),
                                    pd.weights_desc(), false);
                out->diff_dst = Slot(in, activation_desc(*dy_desc, p->layout), pd.diff_dst_desc(), false);
                out->diff_src = Slot(in, activation_desc(*dx_desc, p->layout), pd.diff_src_desc(), true);
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
        if (nhwc_gemm(in, *p, *dw_desc, x_desc->dtype)) {
            gemm_conv_backward_weights(in, *p, *x_desc, static_cast<const float *>(x),
                                       *dy_desc, static_cast<const float *>(dy), *dw_desc,
                                       static_cast<float *>(dw), dbias);
            return;
        }
        auto &e = in.cache.get<BackwardWeightsEntry>(
            conv_key("conv_bwd_weights", *p, *x_desc, *dw_desc, has_bias), [&] {
                auto [hint, wino] = forward_choice(in, *p, *x_desc, *dw_desc, *dy_desc,
                                                   has_bias);
                const auto work = compute_type(in, x_desc->dtype);
                const Geometry g = geometry(*p);
                md bias_md = has_bias ? md({dw_desc->dims[0]}, dnnl::memory::data_type::f32,
                                           tag::a)
                                      : md();
                const bool plain = plain_1x1(in, *p, *dw_desc, x_desc->dtype,
                                             plane_of(*x_desc), true);
                // bfloat16 activations with float32 weights: oneDNN accumulates and writes
                // the weight gradient in float32 itself, rather than rounding it to
                // bfloat16 and converting back.
                const auto dw_type = mixed(*x_desc, *dw_desc) ? dnnl::memory::data_type::f32
                                                              : work;
                auto make = [&](dnnl::algorithm algorithm) {
                    dnnl::convolution_backward_weights::desc d(
                        algorithm, activation(*x_desc, *p, work, plain, wino),
                        weights_any(*dw_desc, p->groups, dw_type), bias_md,
                        activation(*dy_desc, *p, work, plain, wino), g.strides, g.dilates,
                        g.pad, g.pad);
                    return dnnl::convolution_backward_weights::primitive_desc(d, in.engine,
                                                                              hint);
                };
                auto pd = make(algorithm_for(wino));
                // After a Winograd forward, the weight gradient asks for Winograd outright:
                // convolution_auto gives some shapes the direct kernel where Winograd is
                // faster (resnet50's 28x28 128-channel ones: 26 against 43-54 ms per call,
                // one thread, AVX-512; ONEDNN_VERBOSE of disttrain-bench --model resnet50
                // --batch-size 16 --threads 1).
                if (wino && std::string(pd.impl_info_str()).find("wino") == std::string::npos) {
                    try {
                        pd = make(dnnl::algorithm::convolution_winograd);
                    } catch (const dnnl::error &) {
                        // no Winograd kernel for this shape here: the direct one stays
                    }
                }
                auto out = std::make_unique<BackwardWeightsEntry>();
                out->prim = dnnl::convolution_backward_weights(pd);
                out->src = Slot(in, activation_desc(*x_desc, p->layout), pd.src_desc(), false);
                out->diff_dst = Slot(in, activation_desc(*dy_desc, p->layout), pd.diff_dst_desc(), false);
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

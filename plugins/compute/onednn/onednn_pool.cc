// SPDX-License-Identifier: Apache-2.0
// Max and average pooling over plain NCHW (or NHWC) with oneDNN's pooling primitives. Max pooling
// in training keeps oneDNN's workspace (the argmax) in memory the caller owns, sized by
// pool_workspace_size.
#include "onednn_context.h"
#include "onednn_ops.h"

#include <stdexcept>

namespace dtp::onednn {

namespace {

dnnl::algorithm algorithm(int32_t kind)
{
    switch (kind) {
    case DTP_POOL_MAX: return dnnl::algorithm::pooling_max;
    case DTP_POOL_AVG_INCLUDE_PADDING: return dnnl::algorithm::pooling_avg_include_padding;
    default: return dnnl::algorithm::pooling_avg_exclude_padding;
    }
}

dnnl::pooling_forward::primitive_desc forward_pd(const Instance &in, const dtp_pool_t &p,
                                                 const dtp_tensor_t &x, const dtp_tensor_t &y,
                                                 bool training)
{
    dnnl::pooling_forward::desc d(
        training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
        algorithm(p.kind), activation_desc(x, p.layout), activation_desc(y, p.layout), {p.stride[0], p.stride[1]},
        {p.kernel[0], p.kernel[1]}, {p.padding[0], p.padding[1]},
        {p.padding[0], p.padding[1]});
    return dnnl::pooling_forward::primitive_desc(d, in.engine);
}

std::string pool_key(const char *op, const dtp_pool_t &p, const dtp_tensor_t &x)
{
    return std::string(op) + "|" + key_of(x) + "|" + std::to_string(p.kind) + "|" +
           std::to_string(p.kernel[0]) + "," + std::to_string(p.kernel[1]) + "," +
           std::to_string(p.stride[0]) + "," + std::to_string(p.stride[1]) + "," +
           std::to_string(p.padding[0]) + "," + std::to_string(p.padding[1]) +
           (p.layout == DTP_LAYOUT_NHWC ? "|nhwc" : "");
}

struct ForwardEntry : CacheEntry {
    dnnl::pooling_forward prim;
    dnnl::memory::desc src, dst, workspace;
};

struct BackwardEntry : CacheEntry {
    dnnl::pooling_backward prim;
    dnnl::memory::desc diff_src, diff_dst, workspace;
};

ForwardEntry &forward_entry(Instance &in, const dtp_pool_t &p, const dtp_tensor_t &x,
                            const dtp_tensor_t &y, bool training)
{
    return in.cache.get<ForwardEntry>(pool_key(training ? "pool_fwd_train" : "pool_fwd", p, x),
                                      [&] {
                                          auto pd = forward_pd(in, p, x, y, training);
                                          auto e = std::make_unique<ForwardEntry>();
                                          e->prim = dnnl::pooling_forward(pd);
                                          e->src = pd.src_desc();
                                          e->dst = pd.dst_desc();
                                          e->workspace = pd.workspace_desc();
                                          return e;
                                      });
}

} // namespace

int32_t pool_workspace_size(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                            const dtp_tensor_t *y_desc, size_t *bytes)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        *bytes = p->kind == DTP_POOL_MAX
                     ? forward_entry(in, *p, *x_desc, *y_desc, true).workspace.get_size()
                     : 0;
    });
}

int32_t pool_forward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *y_desc, void *y, void *workspace)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        const bool training = p->kind == DTP_POOL_MAX && workspace != nullptr;
        auto &e = forward_entry(in, *p, *x_desc, *y_desc, training);
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, dnnl::memory(e.src, in.engine, const_cast<void *>(x))},
            {DNNL_ARG_DST, dnnl::memory(e.dst, in.engine, y)}};
        if (training)
            args.emplace(DNNL_ARG_WORKSPACE, dnnl::memory(e.workspace, in.engine, workspace));
        e.prim.execute(in.stream, args);
        in.stream.wait();
    });
}

int32_t pool_backward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *,
                      const dtp_tensor_t *y_desc, const void *, const void *dy, void *dx,
                      const void *workspace)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        const bool max = p->kind == DTP_POOL_MAX;
        if (max && workspace == nullptr)
            throw std::invalid_argument(
                "max pooling backward needs the workspace its training forward filled; "
                "allocate dt_compute_pool_workspace_size bytes and pass it to both");
        auto &e = in.cache.get<BackwardEntry>(pool_key("pool_bwd", *p, *x_desc), [&] {
            auto hint = forward_pd(in, *p, *x_desc, *y_desc, true);
            dnnl::pooling_backward::desc d(
                algorithm(p->kind), activation_desc(*x_desc, p->layout),
                activation_desc(*y_desc, p->layout),
                {p->stride[0], p->stride[1]}, {p->kernel[0], p->kernel[1]},
                {p->padding[0], p->padding[1]}, {p->padding[0], p->padding[1]});
            dnnl::pooling_backward::primitive_desc pd(d, in.engine, hint);
            auto out = std::make_unique<BackwardEntry>();
            out->prim = dnnl::pooling_backward(pd);
            out->diff_src = pd.diff_src_desc();
            out->diff_dst = pd.diff_dst_desc();
            out->workspace = hint.workspace_desc();
            return out;
        });
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_DIFF_DST, dnnl::memory(e.diff_dst, in.engine, const_cast<void *>(dy))},
            {DNNL_ARG_DIFF_SRC, dnnl::memory(e.diff_src, in.engine, dx)}};
        if (max)
            args.emplace(DNNL_ARG_WORKSPACE,
                         dnnl::memory(e.workspace, in.engine, const_cast<void *>(workspace)));
        e.prim.execute(in.stream, args);
        in.stream.wait();
    });
}

} // namespace dtp::onednn

// Batch normalisation with oneDNN's primitive over plain (N, C[, H, W]). oneDNN keeps the
// batch variance where the API promises 1 / sqrt(var + eps) (cuDNN's convention), so the
// C-element statistics are converted on the way in and out; the running statistics are
// updated here as PyTorch does (unbiased variance).
#include "onednn_context.h"
#include "onednn_elem.h"
#include "onednn_ops.h"

#include <cmath>
#include <vector>

namespace dtp::onednn {

namespace {

using flags = dnnl::normalization_flags;

struct ForwardEntry : CacheEntry {
    dnnl::batch_normalization_forward prim;
    dnnl::memory::desc data, stat, scale;
    std::vector<float> variance;
};

struct BackwardEntry : CacheEntry {
    dnnl::batch_normalization_backward prim;
    dnnl::memory::desc data, stat, scale;
    std::vector<float> variance;
    // oneDNN 2.6 asks for the shift argument in backward too, though it never reads it.
    std::vector<float> unused_shift;
};

dnnl::batch_normalization_forward::primitive_desc
forward_pd(const Instance &in, const dtp_tensor_t &x, float epsilon, bool training)
{
    auto f = flags::use_scale | flags::use_shift;
    if (!training)
        f = f | flags::use_global_stats;
    dnnl::batch_normalization_forward::desc d(training ? dnnl::prop_kind::forward_training
                                                       : dnnl::prop_kind::forward_inference,
                                              plain_desc(x), epsilon, f);
    return dnnl::batch_normalization_forward::primitive_desc(d, in.engine);
}

std::string bn_key(const char *op, const dtp_tensor_t &x, float epsilon)
{
    return std::string(op) + "|" + key_of(x) + "|" + key_float(epsilon);
}

ForwardEntry &forward_entry(Instance &in, const dtp_tensor_t &x, float epsilon, bool training)
{
    return in.cache.get<ForwardEntry>(bn_key(training ? "bn_fwd_train" : "bn_fwd", x, epsilon),
                                      [&] {
                                          auto pd = forward_pd(in, x, epsilon, training);
                                          auto e = std::make_unique<ForwardEntry>();
                                          e->prim = dnnl::batch_normalization_forward(pd);
                                          e->data = pd.src_desc();
                                          e->stat = pd.mean_desc();
                                          e->scale = pd.weights_desc();
                                          e->variance.resize(x.dims[1]);
                                          return e;
                                      });
}

dnnl::memory mem(const Instance &in, const dnnl::memory::desc &d, const void *p)
{
    return dnnl::memory(d, in.engine, const_cast<void *>(p));
}

} // namespace

int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean,
                                   float *save_invstd, float *running_mean, float *running_var)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        auto &e = forward_entry(in, *x_desc, epsilon, true);
        float *var = e.variance.data();
        e.prim.execute(in.stream, {{DNNL_ARG_SRC, mem(in, e.data, x)},
                                   {DNNL_ARG_DST, mem(in, e.data, y)},
                                   {DNNL_ARG_SCALE, mem(in, e.scale, scale)},
                                   {DNNL_ARG_SHIFT, mem(in, e.scale, shift)},
                                   {DNNL_ARG_MEAN, mem(in, e.stat, save_mean)},
                                   {DNNL_ARG_VARIANCE, mem(in, e.stat, var)}});
        in.stream.wait();
        const int64_t ch = x_desc->dims[1];
        const int64_t n = x_desc->dims[0] * spatial_of(*x_desc);
        const float unbias = n > 1 ? static_cast<float>(n) / static_cast<float>(n - 1) : 1.0f;
        for (int64_t k = 0; k < ch; ++k) {
            save_invstd[k] = 1.0f / std::sqrt(var[k] + epsilon);
            if (running_mean != nullptr) {
                running_mean[k] = (1.0f - momentum) * running_mean[k] + momentum * save_mean[k];
                running_var[k] = (1.0f - momentum) * running_var[k] + momentum * var[k] * unbias;
            }
        }
    });
}

int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        auto &e = forward_entry(in, *x_desc, epsilon, false);
        e.prim.execute(in.stream, {{DNNL_ARG_SRC, mem(in, e.data, x)},
                                   {DNNL_ARG_DST, mem(in, e.data, y)},
                                   {DNNL_ARG_SCALE, mem(in, e.scale, scale)},
                                   {DNNL_ARG_SHIFT, mem(in, e.scale, shift)},
                                   {DNNL_ARG_MEAN, mem(in, e.stat, running_mean)},
                                   {DNNL_ARG_VARIANCE, mem(in, e.stat, running_var)}});
        in.stream.wait();
    });
}

int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale, const float *save_mean,
                           const float *save_invstd, float epsilon, void *dx, float *dscale,
                           float *dshift)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        auto &e = in.cache.get<BackwardEntry>(bn_key("bn_bwd", *x_desc, epsilon), [&] {
            auto hint = forward_pd(in, *x_desc, epsilon, true);
            dnnl::batch_normalization_backward::desc d(
                dnnl::prop_kind::backward, plain_desc(*x_desc), plain_desc(*x_desc), epsilon,
                flags::use_scale | flags::use_shift);
            dnnl::batch_normalization_backward::primitive_desc pd(d, in.engine, hint);
            auto out = std::make_unique<BackwardEntry>();
            out->prim = dnnl::batch_normalization_backward(pd);
            out->data = pd.src_desc();
            out->stat = pd.mean_desc();
            out->scale = pd.weights_desc();
            out->variance.resize(x_desc->dims[1]);
            out->unused_shift.resize(x_desc->dims[1]);
            return out;
        });
        float *var = e.variance.data();
        for (int64_t k = 0; k < x_desc->dims[1]; ++k)
            var[k] = 1.0f / (save_invstd[k] * save_invstd[k]) - epsilon;
        e.prim.execute(in.stream, {{DNNL_ARG_SRC, mem(in, e.data, x)},
                                   {DNNL_ARG_DIFF_DST, mem(in, e.data, dy)},
                                   {DNNL_ARG_SCALE, mem(in, e.scale, scale)},
                                   {DNNL_ARG_SHIFT, mem(in, e.scale, e.unused_shift.data())},
                                   {DNNL_ARG_MEAN, mem(in, e.stat, save_mean)},
                                   {DNNL_ARG_VARIANCE, mem(in, e.stat, var)},
                                   {DNNL_ARG_DIFF_SRC, mem(in, e.data, dx)},
                                   {DNNL_ARG_DIFF_SCALE, mem(in, e.scale, dscale)},
                                   {DNNL_ARG_DIFF_SHIFT, mem(in, e.scale, dshift)}});
        in.stream.wait();
    });
}

} // namespace dtp::onednn

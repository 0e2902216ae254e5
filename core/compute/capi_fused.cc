// SPDX-License-Identifier: Apache-2.0
// dt_compute_* fused with ReLU: batch normalisation (training, inference, backward),
// addition, ReLU's gradient of a sum, and batch normalisation then a shortcut's addition.
// A plugin that offers the fused member runs it fused; for one that does not (a NULL
// member, or a table from before they existed) the core runs the unfused members in
// sequence, on the plugin's memory only (the host may not be able to touch it), which
// gives the bits the separate public calls would give.
#include "compute/batchnorm_check.h"
#include "compute/handle.h"

#include "runtime/error.h"

#include <initializer_list>
#include <utility>

using dt::capi::guard;
using namespace dt::compute;

namespace {

size_t bytes_of(const dtp_tensor_t &t)
{
    const size_t element = t.dtype == DTP_FLOAT32 ? 4 : 2; // float16, bfloat16
    return size_t(elements(t)) * element;
}

void require_distinct(const char *fn, const void *dx,
                      std::initializer_list<std::pair<const char *, const void *>> inputs)
{
    for (auto [what, p] : inputs)
        if (p == dx)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": dx is the same memory as ", what,
                            "; pass a separate dx buffer");
}

// out = max(a + b, 0): the plugin's fused member, else its add then relu_forward in
// place (out may be a or b).
void run_add_relu(ComputeContext &c, const char *fn, const dtp_tensor_t *t, const void *a,
                  const void *b, void *out)
{
    if (c.ops().add_relu != nullptr) {
        c.call(fn, c.ops().add_relu, t, a, b, out);
        return;
    }
    c.call(fn, c.ops().add, t, a, b, out);
    c.call(fn, c.ops().relu_forward, t, static_cast<const void *>(out), out);
}

// The shortcut z of a fused residual end: present and not y, which the unfused sequence
// would overwrite with the batch norm before the add reads z.
void require_shortcut(const char *fn, const void *z, const void *y)
{
    require_ptr(fn, "z", z);
    if (z == y)
        dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": y is the same memory as z (the "
                        "shortcut added before the ReLU); pass a separate y buffer");
}

} // namespace

extern "C" {

DT_API dt_status_t dt_compute_batchnorm_relu_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, float epsilon, float momentum, void *y, float *save_mean,
    float *save_invstd, float *running_mean, float *running_var)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_relu_forward_training";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_training(fn, x_desc, x, scale, shift, epsilon, momentum, y,
                                           save_mean, save_invstd, running_mean, running_var);
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (c.ops().batchnorm_relu_forward_training != nullptr) {
            c.call(fn, c.ops().batchnorm_relu_forward_training, pt, x, scale, shift, epsilon,
                   momentum, y, save_mean, save_invstd, running_mean, running_var);
            return DT_OK;
        }
        c.call(fn, c.ops().batchnorm_forward_training, pt, x, scale, shift, epsilon, momentum,
               y, save_mean, save_invstd, running_mean, running_var);
        c.call(fn, c.ops().relu_forward, pt, static_cast<const void *>(y), y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_relu_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, const float *running_mean, const float *running_var, float epsilon,
    void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_relu_forward_inference";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_inference(fn, x_desc, x, scale, shift, running_mean,
                                            running_var, epsilon, y);
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (c.ops().batchnorm_relu_forward_inference != nullptr) {
            c.call(fn, c.ops().batchnorm_relu_forward_inference, pt, x, scale, shift,
                   running_mean, running_var, epsilon, y);
            return DT_OK;
        }
        c.call(fn, c.ops().batchnorm_forward_inference, pt, x, scale, shift, running_mean,
               running_var, epsilon, y);
        c.call(fn, c.ops().relu_forward, pt, static_cast<const void *>(y), y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_relu_backward(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *y,
    const void *dy, const float *scale, const float *save_mean, const float *save_invstd,
    float epsilon, void *dx, float *dscale, float *dshift)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_relu_backward";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_backward(fn, x_desc, x, dy, scale, save_mean, save_invstd,
                                           epsilon, dx, dscale, dshift);
        require_ptr(fn, "y", y);
        require_distinct(fn, dx, {{"x", x}, {"y", y}, {"dy", dy}});
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (c.ops().batchnorm_relu_backward != nullptr) {
            c.call(fn, c.ops().batchnorm_relu_backward, pt, x, y, dy, scale, save_mean,
                   save_invstd, epsilon, dx, dscale, dshift);
            return DT_OK;
        }
        if (c.ops().relu_backward == nullptr || c.ops().batchnorm_backward == nullptr)
            c.unsupported(fn); // before the scratch buffer, which would go unused
        void *masked = c.scratch(fn, bytes_of(t));
        c.call(fn, c.ops().relu_backward, pt, y, dy, masked);
        c.call(fn, c.ops().batchnorm_backward, pt, x, static_cast<const void *>(masked), scale,
               save_mean, save_invstd, epsilon, dx, dscale, dshift);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_add_relu(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                       const void *a, const void *b, void *c)
{
    return guard([&] {
        const char *fn = "dt_compute_add_relu";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "a", a);
        require_ptr(fn, "b", b);
        require_ptr(fn, "c", c);
        run_add_relu(ctx, fn, &t, a, b, c);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_relu_backward_sum(dt_compute_h compute,
                                                const dt_tensor_desc_t *desc, const void *y,
                                                const void *dy_a, const void *dy_b, void *dx)
{
    return guard([&] {
        const char *fn = "dt_compute_relu_backward_sum";
        ComputeContext &ctx = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "desc", desc);
        require_ptr(fn, "y", y);
        require_ptr(fn, "dy_a", dy_a);
        require_ptr(fn, "dy_b", dy_b);
        require_ptr(fn, "dx", dx);
        require_distinct(fn, dx, {{"y", y}});
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (ctx.ops().relu_backward_sum != nullptr) {
            ctx.call(fn, ctx.ops().relu_backward_sum, pt, y, dy_a, dy_b, dx);
            return DT_OK;
        }
        // The sum goes to scratch: dx may be dy_a or dy_b, which the add must read whole.
        void *sum = ctx.scratch(fn, bytes_of(t));
        ctx.call(fn, ctx.ops().add, pt, dy_a, dy_b, sum);
        ctx.call(fn, ctx.ops().relu_backward, pt, y, static_cast<const void *>(sum), dx);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_add_relu_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *z,
    const float *scale, const float *shift, float epsilon, float momentum, void *y,
    float *save_mean, float *save_invstd, float *running_mean, float *running_var)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_add_relu_forward_training";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_training(fn, x_desc, x, scale, shift, epsilon, momentum, y,
                                           save_mean, save_invstd, running_mean, running_var);
        require_shortcut(fn, z, y);
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (c.ops().batchnorm_add_relu_forward_training != nullptr) {
            c.call(fn, c.ops().batchnorm_add_relu_forward_training, pt, x, z, scale, shift,
                   epsilon, momentum, y, save_mean, save_invstd, running_mean, running_var);
            return DT_OK;
        }
        c.call(fn, c.ops().batchnorm_forward_training, pt, x, scale, shift, epsilon, momentum,
               y, save_mean, save_invstd, running_mean, running_var);
        run_add_relu(c, fn, pt, y, z, y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_add_relu_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *z,
    const float *scale, const float *shift, const float *running_mean,
    const float *running_var, float epsilon, void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_add_relu_forward_inference";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_inference(fn, x_desc, x, scale, shift, running_mean,
                                            running_var, epsilon, y);
        require_shortcut(fn, z, y);
        const auto *pt = static_cast<const dtp_tensor_t *>(&t);
        if (c.ops().batchnorm_add_relu_forward_inference != nullptr) {
            c.call(fn, c.ops().batchnorm_add_relu_forward_inference, pt, x, z, scale, shift,
                   running_mean, running_var, epsilon, y);
            return DT_OK;
        }
        c.call(fn, c.ops().batchnorm_forward_inference, pt, x, scale, shift, running_mean,
               running_var, epsilon, y);
        run_add_relu(c, fn, pt, y, z, y);
        return DT_OK;
    });
}

} // extern "C"

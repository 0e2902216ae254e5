// SPDX-License-Identifier: Apache-2.0
// dt_compute_* for batch normalisation, softmax cross-entropy and the fused optimizer
// updates.
#include "compute/batchnorm_check.h"
#include "compute/handle.h"

#include "runtime/error.h"

#include <cmath>

using dt::capi::guard;
using namespace dt::compute;

namespace {

dtp_tensor_t logits_tensor(const char *fn, const char *what, const dt_tensor_desc_t *desc)
{
    dtp_tensor_t t = tensor(fn, what, desc);
    require_ndims(fn, what, t, 2);
    require_f32(fn, what, t);
    return t;
}

void require_count(const char *fn, size_t count)
{
    if (count == 0 || count > (size_t{1} << 60))
        dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": count = ", count,
                        " must be > 0 (and not a negative number cast to size_t)");
}

} // namespace

extern "C" {

DT_API dt_status_t dt_compute_batchnorm_forward_training(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, float epsilon, float momentum, void *y, float *save_mean,
    float *save_invstd, float *running_mean, float *running_var)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_forward_training";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_training(fn, x_desc, x, scale, shift, epsilon, momentum, y,
                                           save_mean, save_invstd, running_mean, running_var);
        c.call(fn, c.ops().batchnorm_forward_training, static_cast<const dtp_tensor_t *>(&t),
               x, scale, shift, epsilon, momentum, y, save_mean, save_invstd, running_mean,
               running_var);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_forward_inference(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const float *scale,
    const float *shift, const float *running_mean, const float *running_var, float epsilon,
    void *y)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_forward_inference";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_inference(fn, x_desc, x, scale, shift, running_mean,
                                            running_var, epsilon, y);
        c.call(fn, c.ops().batchnorm_forward_inference, static_cast<const dtp_tensor_t *>(&t),
               x, scale, shift, running_mean, running_var, epsilon, y);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_batchnorm_backward(
    dt_compute_h compute, const dt_tensor_desc_t *x_desc, const void *x, const void *dy,
    const float *scale, const float *save_mean, const float *save_invstd, float epsilon,
    void *dx, float *dscale, float *dshift)
{
    return guard([&] {
        const char *fn = "dt_compute_batchnorm_backward";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = check_bn_backward(fn, x_desc, x, dy, scale, save_mean, save_invstd,
                                           epsilon, dx, dscale, dshift);
        c.call(fn, c.ops().batchnorm_backward, static_cast<const dtp_tensor_t *>(&t), x, dy,
               scale, save_mean, save_invstd, epsilon, dx, dscale, dshift);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_softmax_cross_entropy_forward(
    dt_compute_h compute, const dt_tensor_desc_t *logits_desc, const void *logits,
    const int32_t *labels, void *probs, float *loss, int64_t *correct)
{
    return guard([&] {
        const char *fn = "dt_compute_softmax_cross_entropy_forward";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = logits_tensor(fn, "logits_desc", logits_desc);
        require_ptr(fn, "logits", logits);
        require_ptr(fn, "labels", labels);
        require_ptr(fn, "probs", probs);
        require_ptr(fn, "loss", loss);
        float l = 0;
        int64_t n = 0;
        c.call(fn, c.ops().softmax_xent_forward, static_cast<const dtp_tensor_t *>(&t), logits,
               labels, probs, &l, correct != nullptr ? &n : static_cast<int64_t *>(nullptr));
        *loss = l;
        if (correct != nullptr)
            *correct = n;
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_softmax_cross_entropy_backward(
    dt_compute_h compute, const dt_tensor_desc_t *probs_desc, const void *probs,
    const int32_t *labels, float scale, void *dlogits)
{
    return guard([&] {
        const char *fn = "dt_compute_softmax_cross_entropy_backward";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = logits_tensor(fn, "probs_desc", probs_desc);
        require_ptr(fn, "probs", probs);
        require_ptr(fn, "labels", labels);
        require_ptr(fn, "dlogits", dlogits);
        c.call(fn, c.ops().softmax_xent_backward, static_cast<const dtp_tensor_t *>(&t), probs,
               labels, scale, dlogits);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_sgd_update(dt_compute_h compute, const dt_sgd_params_t *p,
                                         size_t count, float *w, const float *grad,
                                         float *momentum_buf)
{
    return guard([&] {
        const char *fn = "dt_compute_sgd_update";
        ComputeContext &c = context(compute, fn);
        require_ptr(fn, "p", p);
        require_count(fn, count);
        require_ptr(fn, "w", w);
        require_ptr(fn, "grad", grad);
        if (p->momentum < 0.0f || !std::isfinite(p->momentum))
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": momentum = ", p->momentum,
                            " must be >= 0");
        if (p->momentum != 0.0f)
            require_ptr(fn, "momentum_buf (needed when momentum > 0)", momentum_buf);
        if (p->nesterov && p->momentum == 0.0f)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": Nesterov needs momentum > 0");
        dtp_sgd_t s{p->lr, p->momentum, p->weight_decay, p->nesterov != 0};
        c.call(fn, c.ops().sgd_update, static_cast<const dtp_sgd_t *>(&s), count, w, grad,
               momentum_buf);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_adam_update(dt_compute_h compute, const dt_adam_params_t *p,
                                          size_t count, float *w, const float *grad, float *m,
                                          float *v)
{
    return guard([&] {
        const char *fn = "dt_compute_adam_update";
        ComputeContext &c = context(compute, fn);
        require_ptr(fn, "p", p);
        require_count(fn, count);
        require_ptr(fn, "w", w);
        require_ptr(fn, "grad", grad);
        require_ptr(fn, "m", m);
        require_ptr(fn, "v", v);
        if (p->step < 1)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": step = ", p->step,
                            " must be >= 1 (1 for the first update)");
        if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f))
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": beta1 = ", p->beta1, " and beta2 = ",
                            p->beta2, " must be in [0, 1)");
        dtp_adam_t a{p->lr, p->beta1, p->beta2, p->epsilon, p->weight_decay, p->decoupled != 0,
                     p->step};
        c.call(fn, c.ops().adam_update, static_cast<const dtp_adam_t *>(&a), count, w, grad, m,
               v);
        return DT_OK;
    });
}

} // extern "C"

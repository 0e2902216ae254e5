// SPDX-License-Identifier: Apache-2.0
// The fused optimizer updates, one pass over (usually) every parameter of the model at
// once: the trainer keeps values, gradients and state in flat buffers. Each formula
// matches PyTorch's term by term (torch.optim.SGD, Adam, AdamW); the kernels are
// vectorised per instruction set (onednn_parallel.h).
#include "onednn_context.h"
#include "onednn_ops.h"
#include "onednn_parallel.h"

#include <cmath>

namespace dtp::onednn {

namespace {

DTP_VECTOR_CLONES
void sgd_plain(int64_t n, float lr, float wd, float *__restrict w, const float *__restrict g)
{
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
        w[i] -= lr * (g[i] + wd * w[i]);
}

DTP_VECTOR_CLONES
void sgd_momentum(int64_t n, float lr, float mu, float wd, bool nesterov, float *__restrict w,
                  const float *__restrict grad, float *__restrict buf)
{
    if (nesterov) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
            const float g = grad[i] + wd * w[i];
            const float b = mu * buf[i] + g;
            buf[i] = b;
            w[i] -= lr * (g + mu * b);
        }
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
            const float g = grad[i] + wd * w[i];
            const float b = mu * buf[i] + g;
            buf[i] = b;
            w[i] -= lr * b;
        }
    }
}

struct AdamConstants {
    float lr, b1, b2, eps, wd, step, root_c2;
    bool decoupled;
};

// PyTorch: denom = sqrt(v) / sqrt(c2) + eps; w -= (lr / c1) * m / denom.
DTP_VECTOR_CLONES
void adam(int64_t n, const AdamConstants &k, float *__restrict w, const float *__restrict grad,
          float *__restrict m, float *__restrict v)
{
    const float b1 = k.b1, b2 = k.b2, eps = k.eps, step = k.step, root_c2 = k.root_c2;
    if (k.decoupled) {
        const float shrink = 1.0f - k.lr * k.wd;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
            const float g = grad[i];
            const float wi = w[i] * shrink;
            const float mi = b1 * m[i] + (1.0f - b1) * g;
            const float vi = b2 * v[i] + (1.0f - b2) * g * g;
            m[i] = mi;
            v[i] = vi;
            w[i] = wi - step * mi / (std::sqrt(vi) / root_c2 + eps);
        }
    } else {
        const float wd = k.wd;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
            const float g = grad[i] + wd * w[i];
            const float mi = b1 * m[i] + (1.0f - b1) * g;
            const float vi = b2 * v[i] + (1.0f - b2) * g * g;
            m[i] = mi;
            v[i] = vi;
            w[i] -= step * mi / (std::sqrt(vi) / root_c2 + eps);
        }
    }
}

} // namespace

int32_t sgd_update(void *c, const dtp_sgd_t *p, size_t count, float *w, const float *grad,
                   float *momentum_buf)
{
    return guarded(c, [&] {
        const float lr = p->lr, mu = p->momentum, wd = p->weight_decay;
        const bool nesterov = p->nesterov != 0;
        for_chunks(static_cast<int64_t>(count), [&](int64_t b, int64_t n) {
            if (mu == 0.0f)
                sgd_plain(n, lr, wd, w + b, grad + b);
            else
                sgd_momentum(n, lr, mu, wd, nesterov, w + b, grad + b, momentum_buf + b);
        });
    });
}

int32_t adam_update(void *c, const dtp_adam_t *p, size_t count, float *w, const float *grad,
                    float *m, float *v)
{
    return guarded(c, [&] {
        const auto t = static_cast<double>(p->step);
        const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p->beta1), t));
        const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p->beta2), t));
        const AdamConstants k{p->lr,          p->beta1,           p->beta2,
                              p->epsilon,     p->weight_decay,    p->lr / c1,
                              std::sqrt(c2),  p->decoupled != 0};
        for_chunks(static_cast<int64_t>(count), [&](int64_t b, int64_t n) {
            adam(n, k, w + b, grad + b, m + b, v + b);
        });
    });
}

} // namespace dtp::onednn

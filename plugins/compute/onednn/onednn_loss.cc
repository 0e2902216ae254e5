// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy as OpenMP loops: small, memory bound, and written to match
// PyTorch's formulas term by term.
#include "onednn_context.h"
#include "onednn_elem.h"
#include "onednn_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dtp::onednn {

int32_t softmax_xent_forward(void *c, const dtp_tensor_t *logits_desc, const void *logits,
                             const int32_t *labels, void *probs, float *loss, int64_t *correct)
{
    return guarded(c, [&] {
        const int64_t rows = logits_desc->dims[0], k = logits_desc->dims[1];
        for (int64_t r = 0; r < rows; ++r)
            if (labels[r] < 0 || labels[r] >= k)
                throw std::invalid_argument("labels[" + std::to_string(r) + "] = " +
                                            std::to_string(labels[r]) + " is not a class in [0, " +
                                            std::to_string(k) + ")");
        const auto *in = static_cast<const float *>(logits);
        auto *out = static_cast<float *>(probs);
        double total = 0.0;
        int64_t hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : total, hits)
        for (int64_t r = 0; r < rows; ++r) {
            const float *x = in + r * k;
            float *p = out + r * k;
            int64_t best = 0;
            for (int64_t j = 1; j < k; ++j)
                if (x[j] > x[best])
                    best = j;
            const float max = x[best];
            double sum = 0.0;
            for (int64_t j = 0; j < k; ++j)
                sum += std::exp(static_cast<double>(x[j] - max));
            const double log_sum = std::log(sum);
            for (int64_t j = 0; j < k; ++j)
                p[j] = static_cast<float>(std::exp(static_cast<double>(x[j] - max) - log_sum));
            total += log_sum - static_cast<double>(x[labels[r]] - max);
            hits += best == labels[r] ? 1 : 0;
        }
        *loss = static_cast<float>(total / static_cast<double>(rows));
        if (correct != nullptr)
            *correct = hits;
    });
}

int32_t softmax_xent_backward(void *c, const dtp_tensor_t *probs_desc, const void *probs,
                              const int32_t *labels, float scale, void *dlogits)
{
    return guarded(c, [&] {
        const int64_t rows = probs_desc->dims[0], k = probs_desc->dims[1];
        for (int64_t r = 0; r < rows; ++r)
            if (labels[r] < 0 || labels[r] >= k)
                throw std::invalid_argument("labels[" + std::to_string(r) + "] = " +
                                            std::to_string(labels[r]) + " is not a class in [0, " +
                                            std::to_string(k) + ")");
        const auto *p = static_cast<const float *>(probs);
        auto *d = static_cast<float *>(dlogits);
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < k; ++j)
                d[r * k + j] = (p[r * k + j] - (j == labels[r] ? 1.0f : 0.0f)) * scale;
    });
}

} // namespace dtp::onednn

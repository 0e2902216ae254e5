// SPDX-License-Identifier: Apache-2.0
#include "nn/loss.h"

namespace dt::models {

LossResult SoftmaxCrossEntropy::forward(const Tensor &logits, const Tensor &labels)
{
    ensure(probs_, c_, logits.desc());
    float loss = 0;
    int64_t correct = 0;
    check(dt_compute_softmax_cross_entropy_forward(c_.get(), &logits.desc(), logits.data(),
                                                   labels.i32(), probs_.data(), &loss,
                                                   &correct),
          "softmax cross-entropy");
    labels_ = labels;
    return {loss, correct};
}

Tensor SoftmaxCrossEntropy::backward(double mean_over)
{
    ensure(dlogits_, c_, probs_.desc());
    const int64_t rows = probs_.dim(0);
    const float scale = mean_over <= 0 || mean_over == double(rows)
                            ? 1.0f / float(rows)
                            : float(1.0 / mean_over);
    check(dt_compute_softmax_cross_entropy_backward(c_.get(), &probs_.desc(), probs_.data(),
                                                    labels_.i32(), scale, dlogits_.data()),
          "softmax cross-entropy backward");
    return dlogits_;
}

} // namespace dt::models

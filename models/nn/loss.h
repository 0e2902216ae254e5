/* SPDX-License-Identifier: Apache-2.0 */
// Softmax cross-entropy, the loss head of every classifier in the zoo: the mean loss
// over the batch, the number of correct predictions, and the gradient of the mean loss.
#pragma once

#include "nn/tensor.h"

namespace dt::models {

struct LossResult {
    double loss = 0;     // mean over the batch
    int64_t correct = 0; // rows whose argmax is the label
};

class SoftmaxCrossEntropy {
public:
    explicit SoftmaxCrossEntropy(const Compute &c) : c_(c) {}

    // labels: N int32 in the compute context's memory.
    LossResult forward(const Tensor &logits, const Tensor &labels);
    // Gradient of the mean loss of the last forward with respect to the logits: the sum
    // over its rows divided by `mean_over` (0: the rows themselves). An elastic job whose
    // ranks take unequal parts of the global batch passes global batch / ranks, so that
    // averaging the ranks' gradients gives the gradient of the global batch's mean loss.
    Tensor backward(double mean_over = 0);

private:
    const Compute &c_;
    Tensor probs_, labels_, dlogits_;
};

} // namespace dt::models

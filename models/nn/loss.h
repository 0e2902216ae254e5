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
    // Gradient of the mean loss of the last forward with respect to the logits.
    Tensor backward();

private:
    const Compute &c_;
    Tensor probs_, labels_, dlogits_;
};

} // namespace dt::models

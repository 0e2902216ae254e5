/* SPDX-License-Identifier: Apache-2.0 */
// One data-parallel training step, shared by disttrain-train and disttrain-bench:
// forward, loss, backward with every gradient's allreduce started as soon as it is
// ready, wait for them, optimizer update. mean_over: see SoftmaxCrossEntropy::backward.
#pragma once

#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/distributed.h"
#include "zoo/zoo.h"

namespace dt::models {

inline LossResult train_step(Model &model, SoftmaxCrossEntropy &loss, GradientSync &sync,
                             Optimizer &optimizer, const Tensor &x, const Tensor &y,
                             double lr, double mean_over = 0)
{
    const LossResult r = loss.forward(model.net->forward(x, true), y);
    model.net->backward(loss.backward(mean_over), sync.callback());
    sync.wait_all();
    optimizer.step(lr);
    return r;
}

} // namespace dt::models

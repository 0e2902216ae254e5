/* SPDX-License-Identifier: Apache-2.0 */
// One data-parallel training step, shared by disttrain-train and disttrain-bench:
// forward, loss, backward with every gradient's allreduce started as soon as it is
// ready, wait for them, optimizer update.
#pragma once

#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/distributed.h"
#include "zoo/zoo.h"

namespace dt::models {

inline LossResult train_step(Model &model, SoftmaxCrossEntropy &loss, GradientSync &sync,
                             Optimizer &optimizer, const Tensor &x, const Tensor &y,
                             double lr)
{
    const LossResult r = loss.forward(model.net->forward(x, true), y);
    model.net->backward(loss.backward(), sync.callback());
    sync.wait_all();
    optimizer.step(lr);
    return r;
}

} // namespace dt::models

/* SPDX-License-Identifier: Apache-2.0 */
// Model parameters and buffers in checkpoints and across ranks.
#pragma once

#include "nn/optimizer.h"
#include "train/checkpoint.h"
#include "zoo/zoo.h"

#include <cstdint>

namespace dt::models {

// "model/<parameter name>" and "model/<buffer name>" entries, plus the model's name.
void save_model(const Compute &c, const Model &model, CheckpointState &out);
// Throws InputError when the checkpoint holds another model or other shapes.
void load_model(const Compute &c, Model &model, const CheckpointState &in);

// Every tensor that must agree across ranks: parameters then buffers.
std::vector<Tensor> model_tensors(const Model &model);

std::vector<Tensor> buffer_tensors(const Model &model);

// 64-bit FNV-1a of the bytes of model_tensors() in order, copied to the host: equal
// checksums mean bit-identical parameters and buffers (across ranks, or across compute
// plugins that should agree).
uint64_t model_checksum(const Compute &c, const Model &model);

} // namespace dt::models

// Model parameters and buffers in checkpoints and across ranks.
#pragma once

#include "nn/optimizer.h"
#include "train/checkpoint.h"
#include "zoo/zoo.h"

namespace dt::models {

// "model/<parameter name>" and "model/<buffer name>" entries, plus the model's name.
void save_model(const Compute &c, const Model &model, CheckpointState &out);
// Throws InputError when the checkpoint holds another model or other shapes.
void load_model(const Compute &c, Model &model, const CheckpointState &in);

// Every tensor that must agree across ranks: parameters then buffers.
std::vector<Tensor> model_tensors(const Model &model);

// A 64-bit FNV-1a hash of the bytes of every model tensor (parameters then buffers, read
// back to the host), so that runs can show their ranks hold bit-identical models, or
// that two runs agree, without writing a checkpoint.
uint64_t model_checksum(const Compute &c, const Model &model);
std::vector<Tensor> buffer_tensors(const Model &model);

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
#include "nn/optimizer.h"

#include "common/error.h"
#include "train/checkpoint.h"

#include <algorithm>
#include <stdexcept>

namespace dt::models {
namespace {
bool is_adam(OptimizerKind k) { return k == OptimizerKind::adam || k == OptimizerKind::adamw; }
} // namespace

OptimizerKind parse_optimizer(const std::string &name)
{
    for (auto k : {OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::nesterov,
                   OptimizerKind::adam, OptimizerKind::adamw})
        if (name == optimizer_name(k))
            return k;
    throw_input_error("unknown optimizer '", name,
                      "'; choose sgd, momentum, nesterov, adam or adamw");
}

const char *optimizer_name(OptimizerKind kind)
{
    switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::momentum: return "momentum";
    case OptimizerKind::nesterov: return "nesterov";
    case OptimizerKind::adam: return "adam";
    case OptimizerKind::adamw: return "adamw";
    }
    return "?";
}

namespace {
// Each parameter starts on a 64-byte boundary of the flat buffers, so every window is
// as aligned as a tensor of its own and the vector loops split evenly.
constexpr size_t kAlignFloats = 16;

size_t aligned(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

Tensor flat(const Compute &c, size_t count)
{
    Tensor t(c, dt_tensor_desc_1d(DT_FLOAT32, int64_t(count)));
    t.fill(c, 0.0f); // the padding between parameters stays zero: its update is zero
    return t;
}
} // namespace

Optimizer::Optimizer(const Compute &c, const OptimizerConfig &config,
                     std::vector<Parameter *> params)
    : c_(c), config_(config), params_(std::move(params))
{
    std::vector<size_t> offsets;
    for (Parameter *p : params_) {
        if (p->value.desc().dtype != DT_FLOAT32 || p->grad.numel() != p->value.numel())
            throw std::logic_error(cat("optimizer: parameter ", p->name,
                                       " is not float32 with a gradient of its size"));
        offsets.push_back(count_);
        count_ += aligned(p->value.numel());
    }
    values_ = flat(c, std::max<size_t>(count_, 1));
    grads_ = flat(c, std::max<size_t>(count_, 1));
    const bool has_m = config.kind != OptimizerKind::sgd;
    if (has_m)
        m_flat_ = flat(c, std::max<size_t>(count_, 1));
    if (is_adam(config.kind))
        v_flat_ = flat(c, std::max<size_t>(count_, 1));
    for (size_t i = 0; i < params_.size(); ++i) {
        Parameter &p = *params_[i];
        const dt_tensor_desc_t d = p.value.desc();
        Tensor value = values_.slice(offsets[i], d);
        value.copy_from(c, p.value);
        p.value = value;
        p.grad = grads_.slice(offsets[i], d);
        if (has_m)
            m_.push_back(m_flat_.slice(offsets[i], d));
        if (is_adam(config.kind))
            v_.push_back(v_flat_.slice(offsets[i], d));
    }
}

void Optimizer::step(double lr)
{
    ++steps_;
    if (count_ == 0)
        return;
    if (is_adam(config_.kind)) {
        dt_adam_params_t a{};
        a.lr = float(lr);
        a.beta1 = float(config_.beta1);
        a.beta2 = float(config_.beta2);
        a.epsilon = float(config_.epsilon);
        a.weight_decay = float(config_.weight_decay);
        a.decoupled = config_.kind == OptimizerKind::adamw;
        a.step = steps_;
        check(dt_compute_adam_update(c_.get(), &a, count_, values_.f32(), grads_.f32(),
                                     m_flat_.f32(), v_flat_.f32()),
              "adam update");
    } else {
        dt_sgd_params_t s{};
        s.lr = float(lr);
        s.momentum = config_.kind == OptimizerKind::sgd ? 0.0f : float(config_.momentum);
        s.weight_decay = float(config_.weight_decay);
        s.nesterov = config_.kind == OptimizerKind::nesterov;
        check(dt_compute_sgd_update(c_.get(), &s, count_, values_.f32(), grads_.f32(),
                                    m_flat_.empty() ? nullptr : m_flat_.f32()),
              "sgd update");
    }
}

void Optimizer::save(CheckpointState &out) const
{
    out.put_string("optimizer/kind", optimizer_name(config_.kind));
    out.put_u64("optimizer/steps", uint64_t(steps_));
    for (size_t i = 0; i < params_.size(); ++i) {
        if (!m_.empty())
            out.put<float>("optimizer/m/" + params_[i]->name, m_[i].to_vector(c_));
        if (!v_.empty())
            out.put<float>("optimizer/v/" + params_[i]->name, v_[i].to_vector(c_));
    }
}

void Optimizer::load(const CheckpointState &in)
{
    const std::string kind = in.get_string("optimizer/kind");
    if (kind != optimizer_name(config_.kind))
        throw_input_error("the checkpoint was written with --optimizer ", kind,
                          " but this run uses ", optimizer_name(config_.kind));
    steps_ = int64_t(in.get_u64("optimizer/steps"));
    std::vector<float> host;
    auto restore = [&](const std::string &name, const Tensor &t) {
        host.resize(t.numel());
        in.get_into(name, host.data(), t.bytes());
        t.copy_from_host(c_, host.data());
    };
    for (size_t i = 0; i < params_.size(); ++i) {
        if (!m_.empty())
            restore("optimizer/m/" + params_[i]->name, m_[i]);
        if (!v_.empty())
            restore("optimizer/v/" + params_[i]->name, v_[i]);
    }
}

std::vector<Tensor> Optimizer::state() const
{
    std::vector<Tensor> out = m_;
    out.insert(out.end(), v_.begin(), v_.end());
    return out;
}

} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
#include "nn/optimizer.h"

#include "common/error.h"
#include "train/checkpoint.h"

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

Optimizer::Optimizer(const Compute &c, const OptimizerConfig &config,
                     std::vector<Parameter *> params)
    : c_(c), config_(config), params_(std::move(params))
{
    const bool has_m = config.kind != OptimizerKind::sgd;
    for (Parameter *p : params_) {
        if (has_m) {
            m_.emplace_back(c, p->value.desc());
            m_.back().fill(c, 0.0f);
        }
        if (is_adam(config.kind)) {
            v_.emplace_back(c, p->value.desc());
            v_.back().fill(c, 0.0f);
        }
    }
}

void Optimizer::step(double lr)
{
    ++steps_;
    for (size_t i = 0; i < params_.size(); ++i) {
        Parameter &p = *params_[i];
        if (is_adam(config_.kind)) {
            dt_adam_params_t a{};
            a.lr = float(lr);
            a.beta1 = float(config_.beta1);
            a.beta2 = float(config_.beta2);
            a.epsilon = float(config_.epsilon);
            a.weight_decay = float(config_.weight_decay);
            a.decoupled = config_.kind == OptimizerKind::adamw;
            a.step = steps_;
            check(dt_compute_adam_update(c_.get(), &a, p.value.numel(), p.value.f32(),
                                         p.grad.f32(), m_[i].f32(), v_[i].f32()),
                  "adam update");
        } else {
            dt_sgd_params_t s{};
            s.lr = float(lr);
            s.momentum = config_.kind == OptimizerKind::sgd ? 0.0f : float(config_.momentum);
            s.weight_decay = float(config_.weight_decay);
            s.nesterov = config_.kind == OptimizerKind::nesterov;
            check(dt_compute_sgd_update(c_.get(), &s, p.value.numel(), p.value.f32(),
                                        p.grad.f32(), m_.empty() ? nullptr : m_[i].f32()),
                  "sgd update");
        }
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

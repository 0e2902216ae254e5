// SPDX-License-Identifier: Apache-2.0
// The fused optimizer (one update over flat buffers of all parameters) against the
// unfused reference: the same update applied tensor by tensor with the plugin's
// per-tensor calls, for every optimizer kind, with parameter sizes that leave alignment
// padding between them. Also that the parameters keep their values when moved into the
// flat buffers and that the state windows hold each parameter's own moments.
#include "common/random.h"
#include "nn/linear.h"
#include "nn/optimizer.h"
#include "nn/sequential.h"
#include "nn/simple_layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dt::models {
namespace {

struct HostParam {
    std::vector<float> w, m, v;
};

// One step of the per-tensor reference on host copies, through the plugin's own calls.
void reference_step(const Compute &c, const OptimizerConfig &cfg, int64_t step, double lr,
                    HostParam &p, std::vector<float> grad)
{
    if (cfg.kind == OptimizerKind::adam || cfg.kind == OptimizerKind::adamw) {
        dt_adam_params_t a{};
        a.lr = float(lr);
        a.beta1 = float(cfg.beta1);
        a.beta2 = float(cfg.beta2);
        a.epsilon = float(cfg.epsilon);
        a.weight_decay = float(cfg.weight_decay);
        a.decoupled = cfg.kind == OptimizerKind::adamw;
        a.step = step;
        ASSERT_EQ(dt_compute_adam_update(c.get(), &a, p.w.size(), p.w.data(), grad.data(),
                                         p.m.data(), p.v.data()),
                  DT_OK);
        return;
    }
    dt_sgd_params_t s{};
    s.lr = float(lr);
    s.momentum = cfg.kind == OptimizerKind::sgd ? 0.0f : float(cfg.momentum);
    s.weight_decay = float(cfg.weight_decay);
    s.nesterov = cfg.kind == OptimizerKind::nesterov;
    ASSERT_EQ(dt_compute_sgd_update(c.get(), &s, p.w.size(), p.w.data(), grad.data(),
                                    cfg.kind == OptimizerKind::sgd ? nullptr : p.m.data()),
              DT_OK);
}

void expect_near_all(const std::vector<float> &got, const std::vector<float> &want,
                     const std::string &what)
{
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::fabs(want[i])) << what << "[" << i << "]";
}

class FusedOptimizer : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(FusedOptimizer, MatchesPerTensorUpdates)
{
    Compute c{ComputeOptions{1, false, ""}};
    Random rng{7};
    // 7x5 + 5, 5x3 + 3, 3x11 + 11 floats: none a multiple of the 16-float alignment.
    Sequential net(c, "net");
    net.add<Linear>("a", 5, 7, rng);
    net.add<Relu>("r");
    net.add<Linear>("b", 7, 3, rng);
    net.add<Linear>("c", 3, 11, rng);
    std::vector<Parameter *> params;
    net.parameters(params);
    std::vector<HostParam> ref;
    for (Parameter *p : params) {
        HostParam h;
        h.w = p->value.to_vector(c);
        h.m.assign(h.w.size(), 0.0f);
        h.v.assign(h.w.size(), 0.0f);
        ref.push_back(h);
    }

    OptimizerConfig cfg;
    cfg.kind = GetParam();
    cfg.weight_decay = 0.01;
    Optimizer opt(c, cfg, params);
    for (size_t i = 0; i < params.size(); ++i)
        expect_near_all(params[i]->value.to_vector(c), ref[i].w, params[i]->name + " moved");

    Random grads{11};
    for (int64_t step = 1; step <= 4; ++step) {
        const double lr = 0.05 / double(step);
        for (size_t i = 0; i < params.size(); ++i) {
            std::vector<float> g(ref[i].w.size());
            for (float &x : g)
                x = float(grads.uniform() * 2.0 - 1.0);
            params[i]->grad.copy_from_host(c, g.data());
            reference_step(c, cfg, step, lr, ref[i], g);
        }
        opt.step(lr);
        for (size_t i = 0; i < params.size(); ++i)
            expect_near_all(params[i]->value.to_vector(c), ref[i].w, params[i]->name);
    }
    // The state tensors are per-parameter windows holding that parameter's moments.
    const std::vector<Tensor> state = opt.state();
    const bool has_m = cfg.kind != OptimizerKind::sgd;
    const bool adam = cfg.kind == OptimizerKind::adam || cfg.kind == OptimizerKind::adamw;
    ASSERT_EQ(state.size(), params.size() * ((has_m ? 1 : 0) + (adam ? 1 : 0)));
    for (size_t i = 0; i < params.size(); ++i) {
        if (has_m)
            expect_near_all(state[i].to_vector(c), ref[i].m, params[i]->name + " m");
        if (adam)
            expect_near_all(state[params.size() + i].to_vector(c), ref[i].v,
                            params[i]->name + " v");
    }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, FusedOptimizer,
                         ::testing::Values(OptimizerKind::sgd, OptimizerKind::momentum,
                                           OptimizerKind::nesterov, OptimizerKind::adam,
                                           OptimizerKind::adamw),
                         [](const auto &info) { return std::string(optimizer_name(info.param)); });

} // namespace
} // namespace dt::models

// SPDX-License-Identifier: Apache-2.0
#include "common/random.h"
#include "nn/layer.h"

namespace dt::models {

void init_uniform(const Compute &c, const Tensor &t, double bound, Random &rng)
{
    std::vector<float> host(t.numel());
    for (float &v : host)
        v = static_cast<float>((rng.uniform() * 2.0 - 1.0) * bound);
    t.copy_from_host(c, host.data());
}

void init_normal(const Compute &c, const Tensor &t, double stddev, Random &rng)
{
    std::vector<float> host(t.numel());
    for (float &v : host)
        v = static_cast<float>(rng.normal() * stddev);
    t.copy_from_host(c, host.data());
}

} // namespace dt::models

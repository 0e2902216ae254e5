/* SPDX-License-Identifier: Apache-2.0 */
// Helpers of the compute gtest suites: a context on the oneDNN plugin, random tensors,
// and a central finite-difference gradient of a scalar function.
#pragma once

#include <disttrain/compute.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace dt::test {

// The plugin these suites run on: onednn, or the one DT_TEST_COMPUTE_PLUGIN names (the
// cuDNN plugin built for the CPU, whose "device memory" is host memory, runs them too).
inline std::string test_plugin()
{
    const char *plugin = std::getenv("DT_TEST_COMPUTE_PLUGIN");
    return plugin != nullptr && *plugin != '\0' ? plugin : "onednn";
}

// A compute context on test_plugin() with 1 thread, destroyed at scope exit.
class ComputeFixture : public ::testing::Test {
protected:
    void SetUp() override
    {
        dt_compute_params_t p{};
        p.field_mask = DT_COMPUTE_PARAM_FIELD_PLUGIN | DT_COMPUTE_PARAM_FIELD_THREADS;
        const std::string plugin = test_plugin();
        p.plugin = plugin.c_str();
        p.threads = 1;
        ASSERT_EQ(dt_compute_create(&p, &c), DT_OK) << dt_last_error();
    }
    void TearDown() override { EXPECT_EQ(dt_compute_destroy(c), DT_OK); }

    dt_compute_h c = nullptr;
};

inline std::vector<float> random_vector(size_t n, unsigned seed, float lo = -1.0f,
                                        float hi = 1.0f)
{
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v)
        x = dist(gen);
    return v;
}

// ||got - want|| / ||want||: a whole tensor's error, where one rounding of each element
// (bfloat16 keeps 8 significant bits) gives about 0.3% and a wrong kernel O(1).
inline double relative_error(const std::vector<float> &got, const std::vector<float> &want)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        den += double(want[i]) * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

inline double dot(const std::vector<float> &a, const std::vector<float> &b)
{
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i)
        s += double(a[i]) * double(b[i]);
    return s;
}

// Checks analytic[i] against (f(x + eps e_i) - f(x - eps e_i)) / 2 eps for every i
// (or a stride of them for large x), where f reads x.
inline void expect_gradient(std::vector<float> &x, const std::function<double()> &f,
                            const std::vector<float> &analytic, const char *what,
                            float eps = 1e-2f, double tol = 2e-2)
{
    ASSERT_EQ(x.size(), analytic.size()) << what;
    const size_t step = x.size() > 200 ? x.size() / 97 : 1;
    for (size_t i = 0; i < x.size(); i += step) {
        const float saved = x[i];
        x[i] = saved + eps;
        const double up = f();
        x[i] = saved - eps;
        const double down = f();
        x[i] = saved;
        const double numeric = (up - down) / (2.0 * eps);
        EXPECT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::fabs(numeric)))
            << what << "[" << i << "]";
    }
}

} // namespace dt::test

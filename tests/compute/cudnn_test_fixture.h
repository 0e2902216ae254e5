/* SPDX-License-Identifier: Apache-2.0 */
// The fixtures of the cuDNN plugin's gtests (cudnn_test.cc, cudnn_batchnorm_test.cc): a
// GPU context on the cuDNN plugin beside a CPU one on oneDNN, device copies of host data
// freed at tear-down, and bfloat16 copies. Without a GPU the plugin declines with "no
// GPU" and every test is skipped.
#pragma once

#include "compute_test_util.h"

#include <string>

namespace dt::test {

class Cudnn : public ::testing::Test {
protected:
    void SetUp() override
    {
        setenv("DISTTRAIN_TF32", tf32_ ? "1" : "0", 1);
        if (batchnorm_ != nullptr)
            setenv("DISTTRAIN_CUDNN_BATCHNORM", batchnorm_, 1);
        dt_compute_params_t p{};
        p.field_mask = DT_COMPUTE_PARAM_FIELD_PLUGIN;
        p.plugin = "cudnn";
        dt_status_t s = dt_compute_create(&p, &gpu);
        unsetenv("DISTTRAIN_TF32"); // read when the context starts
        unsetenv("DISTTRAIN_CUDNN_BATCHNORM");
        if (s != DT_OK && std::string(dt_last_error()).find("no GPU") != std::string::npos)
            GTEST_SKIP() << "no GPU: " << dt_last_error();
        ASSERT_EQ(s, DT_OK) << dt_last_error();
        p.plugin = "onednn";
        ASSERT_EQ(dt_compute_create(&p, &cpu), DT_OK) << dt_last_error();
    }
    void TearDown() override
    {
        for (void *b : buffers)
            dt_compute_free(gpu, b);
        dt_compute_destroy(gpu);
        dt_compute_destroy(cpu);
    }

    // A device copy of host data, freed at tear-down.
    template <typename T>
    void *up(const std::vector<T> &host)
    {
        void *d = nullptr;
        EXPECT_EQ(dt_compute_alloc(gpu, host.size() * sizeof(T), &d), DT_OK) << dt_last_error();
        EXPECT_EQ(dt_compute_memcpy(gpu, d, host.data(), host.size() * sizeof(T),
                                    DT_COPY_HOST_TO_DEVICE), DT_OK);
        buffers.push_back(d);
        return d;
    }
    std::vector<float> down(const void *d, size_t n)
    {
        std::vector<float> h(n);
        EXPECT_EQ(dt_compute_memcpy(gpu, h.data(), d, n * sizeof(float), DT_COPY_DEVICE_TO_HOST),
                  DT_OK) << dt_last_error();
        return h;
    }
    static void expect_close(const std::vector<float> &a, const std::vector<float> &b,
                             const char *what, double tol = 1e-4)
    {
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            ASSERT_NEAR(a[i], b[i], tol * std::max(1.0, std::fabs(double(b[i])))) << what << i;
    }

    // The three directions of one convolution on h: y from x, dx from dy, dw (and db when
    // bias is given) from x and dy. Call through ASSERT_NO_FATAL_FAILURE.
    struct Conv {
        const dt_conv_params_t &p;
        const dt_tensor_desc_t &xd, &wd, &yd;
        const dt_tensor_desc_t *bd;
    };
    static void conv_all(dt_compute_h h, const Conv &c, const void *x, const void *w,
                         const void *b, void *y, const void *dy, void *dx, void *dw, void *db)
    {
        ASSERT_EQ(dt_compute_conv_forward(h, &c.p, &c.xd, x, &c.wd, w, c.bd, b, &c.yd, y),
                  DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_conv_backward_data(h, &c.p, &c.wd, w, &c.yd, dy, &c.xd, dx),
                  DT_OK) << dt_last_error();
        ASSERT_EQ(dt_compute_conv_backward_weights(h, &c.p, &c.xd, x, &c.yd, dy, &c.wd, dw,
                                                   c.bd, db), DT_OK) << dt_last_error();
    }

    dt_compute_h gpu = nullptr, cpu = nullptr;
    bool tf32_ = false;
    const char *batchnorm_ = nullptr; // DISTTRAIN_CUDNN_BATCHNORM for the GPU context
    std::vector<void *> buffers;
};

// Device bfloat16 tensors for the mixed-precision tests.
class CudnnBf16 : public Cudnn {
protected:
    // A device bfloat16 copy of v, and v's values as bfloat16 holds them (host float32).
    void *bf16(std::vector<float> &v)
    {
        void *f = up(v), *h = nullptr;
        EXPECT_EQ(dt_compute_alloc(gpu, v.size() * 2, &h), DT_OK) << dt_last_error();
        buffers.push_back(h);
        const auto d = dt_tensor_desc_1d(DT_FLOAT32, int64_t(v.size()));
        EXPECT_EQ(dt_compute_cast(gpu, &d, f, DT_BFLOAT16, h), DT_OK) << dt_last_error();
        v = down16(h, v.size());
        return h;
    }
    void *zeros16(size_t n)
    {
        std::vector<float> z(n, 0.0f);
        return bf16(z);
    }
    std::vector<float> down16(const void *d, size_t n)
    {
        void *f = up(std::vector<float>(n));
        const auto desc = dt_tensor_desc_1d(DT_BFLOAT16, int64_t(n));
        EXPECT_EQ(dt_compute_cast(gpu, &desc, d, DT_FLOAT32, f), DT_OK) << dt_last_error();
        return down(f, n);
    }
    static void expect_near_l2(const std::vector<float> &got, const std::vector<float> &want,
                               const char *what)
    {
        EXPECT_LT(relative_error(got, want), 1e-2) << what;
    }
};

} // namespace dt::test

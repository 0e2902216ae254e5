// SPDX-License-Identifier: Apache-2.0
// Bad input to the compute API: every mistake is refused with a status and a message that
// names the argument, and nothing is computed.
#include "compute_test_util.h"

#include <string>

namespace dt::test {
namespace {

using Errors = ComputeFixture;

std::string last() { return dt_last_error(); }

TEST_F(Errors, ConvOutputShapeMismatchNamesTheShapes)
{
    dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 1, 3, 8, 8);
    dt_tensor_desc_t wd = dt_tensor_desc_4d(DT_FLOAT32, 4, 3, 3, 3);
    dt_tensor_desc_t yd = dt_tensor_desc_4d(DT_FLOAT32, 1, 4, 8, 8); // should be 6x6
    std::vector<float> x(192), w(108), y(256);
    EXPECT_EQ(dt_compute_conv_forward(c, nullptr, &xd, x.data(), &wd, w.data(), nullptr, nullptr,
                                      &yd, y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("y_desc is (1, 4, 8, 8) float32"), std::string::npos) << last();
    EXPECT_NE(last().find("(1, 4, 6, 6)"), std::string::npos) << last();

    dt_tensor_desc_t wbad = dt_tensor_desc_4d(DT_FLOAT32, 4, 2, 3, 3);
    EXPECT_EQ(dt_compute_conv_forward(c, nullptr, &xd, x.data(), &wbad, w.data(), nullptr,
                                      nullptr, &yd, y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("w.dims[1] = 3"), std::string::npos) << last();
}

TEST_F(Errors, UnknownDtypeBadDimsAndNulls)
{
    std::vector<float> x(16), y(16);
    dt_tensor_desc_t d = dt_tensor_desc_1d(static_cast<dt_dtype_t>(42), 16);
    EXPECT_EQ(dt_compute_relu_forward(c, &d, x.data(), y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("dtype 42"), std::string::npos) << last();

    d = dt_tensor_desc_1d(DT_INT64, 16);
    EXPECT_EQ(dt_compute_relu_forward(c, &d, x.data(), y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("int64"), std::string::npos) << last();

    d = dt_tensor_desc_2d(DT_FLOAT32, 4, 0);
    EXPECT_EQ(dt_compute_relu_forward(c, &d, x.data(), y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("dims[1] = 0"), std::string::npos) << last();

    d = dt_tensor_desc_1d(DT_FLOAT32, 16);
    d.ndims = 5;
    EXPECT_EQ(dt_compute_relu_forward(c, &d, x.data(), y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("ndims 5"), std::string::npos) << last();

    d.ndims = 1;
    EXPECT_EQ(dt_compute_relu_forward(c, &d, nullptr, y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("x must not be NULL"), std::string::npos) << last();
    EXPECT_EQ(dt_compute_relu_forward(nullptr, &d, x.data(), y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dt_compute_matmul(c, DT_INT32, DT_FLOAT32, 0, 0, 2, 2, 2, 1, x.data(), x.data(), 0,
                                y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dt_compute_matmul(c, DT_FLOAT32, DT_FLOAT32, 0, 0, 2, -1, 2, 1, x.data(), x.data(),
                                0, y.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("m, n, k = 2, -1, 2"), std::string::npos) << last();
}

TEST_F(Errors, BiasChannelsLabelsAndPoolParams)
{
    std::vector<float> y(24), b(5);
    dt_tensor_desc_t yd = dt_tensor_desc_2d(DT_FLOAT32, 4, 6);
    dt_tensor_desc_t bd = dt_tensor_desc_1d(DT_FLOAT32, 5);
    EXPECT_EQ(dt_compute_bias_add(c, &yd, y.data(), &bd, b.data()), DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("6 elements"), std::string::npos) << last();

    std::vector<int32_t> labels{0, 1, 6, 2};
    std::vector<float> probs(24);
    float loss = -1;
    EXPECT_EQ(dt_compute_softmax_cross_entropy_forward(c, &yd, y.data(), labels.data(),
                                                       probs.data(), &loss, nullptr),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("labels[2] = 6"), std::string::npos) << last();
    EXPECT_EQ(loss, -1.0f) << "outputs are written only on success";

    dt_pool_params_t p{};
    p.field_mask = DT_POOL_PARAM_FIELD_KIND;
    dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 1, 1, 4, 4);
    dt_tensor_desc_t pd = dt_tensor_desc_4d(DT_FLOAT32, 1, 1, 2, 2);
    std::vector<float> x(16), out(4), dx(16);
    EXPECT_EQ(dt_compute_pool_forward(c, &p, &xd, x.data(), &pd, out.data(), nullptr),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("KERNEL"), std::string::npos) << last();
    p.field_mask |= DT_POOL_PARAM_FIELD_KERNEL;
    p.kernel[0] = p.kernel[1] = 2;
    // Every pooling entry point checks y against the shape pooling x gives (2x2 here).
    dt_tensor_desc_t wrong = dt_tensor_desc_4d(DT_FLOAT32, 1, 1, 3, 3);
    std::vector<float> wrong_y(9);
    size_t wrong_workspace = 7;
    EXPECT_EQ(dt_compute_pool_workspace_size(c, &p, &xd, &wrong, &wrong_workspace),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(wrong_workspace, 7u);
    EXPECT_EQ(dt_compute_pool_forward(c, &p, &xd, x.data(), &wrong, wrong_y.data(), nullptr),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dt_compute_pool_backward(c, &p, &xd, x.data(), &wrong, wrong_y.data(),
                                       wrong_y.data(), dx.data(), nullptr),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("dt_compute_pool_backward: y_desc is"), std::string::npos) << last();
    EXPECT_NE(last().find("pooling x gives"), std::string::npos) << last();
    // Max pooling's backward needs the forward's workspace where the plugin asks for one:
    // oneDNN does (it keeps the argmax); cuDNN does not (it finds the argmax from x and y).
    size_t workspace = 0;
    ASSERT_EQ(dt_compute_pool_workspace_size(c, &p, &xd, &pd, &workspace), DT_OK)
        << last();
    if (test_plugin() == "onednn") {
        EXPECT_GT(workspace, 0u);
    }
    const dt_status_t without = dt_compute_pool_backward(c, &p, &xd, x.data(), &pd, out.data(),
                                                         out.data(), dx.data(), nullptr);
    if (workspace > 0) {
        EXPECT_EQ(without, DT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(last().find("workspace"), std::string::npos) << last();
    } else {
        EXPECT_EQ(without, DT_OK) << last();
    }
}

TEST_F(Errors, OptimizerArguments)
{
    std::vector<float> w(4), g(4), m(4), v(4);
    dt_adam_params_t a{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 0};
    EXPECT_EQ(dt_compute_adam_update(c, &a, 4, w.data(), g.data(), m.data(), v.data()),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("step = 0"), std::string::npos) << last();
    dt_sgd_params_t s{0.1f, 0.9f, 0.0f, 0};
    EXPECT_EQ(dt_compute_sgd_update(c, &s, 4, w.data(), g.data(), nullptr),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("momentum_buf"), std::string::npos) << last();
    EXPECT_EQ(dt_compute_sgd_update(c, &s, static_cast<size_t>(-4), w.data(), g.data(), m.data()),
              DT_ERR_INVALID_ARGUMENT);
}

TEST_F(Errors, QueryAndMemory)
{
    dt_compute_attr_t attr{};
    attr.field_mask = DT_COMPUTE_ATTR_FIELD_PLUGIN | DT_COMPUTE_ATTR_FIELD_DEVICE_KIND |
                      DT_COMPUTE_ATTR_FIELD_THREADS | DT_COMPUTE_ATTR_FIELD_DEVICE_NAME;
    ASSERT_EQ(dt_compute_query(c, &attr), DT_OK);
    EXPECT_EQ(attr.plugin, test_plugin());
    if (test_plugin() == "onednn") {
        EXPECT_EQ(attr.device_kind, DT_COMPUTE_DEVICE_CPU);
        EXPECT_EQ(attr.threads, 1);
        EXPECT_NE(std::string(attr.device_name).find("cpu"), std::string::npos);
    } else {
        EXPECT_EQ(attr.device_kind, DT_COMPUTE_DEVICE_GPU);
    }

    void *p = nullptr;
    EXPECT_EQ(dt_compute_alloc(c, 0, &p), DT_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(dt_compute_alloc(c, 1000, &p), DT_OK);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    float src[3] = {1, 2, 3};
    EXPECT_EQ(dt_compute_memcpy(c, p, src, sizeof(src), DT_COPY_HOST_TO_DEVICE), DT_OK);
    EXPECT_EQ(static_cast<float *>(p)[2], 3.0f);
    EXPECT_EQ(dt_compute_memcpy(c, p, src, sizeof(src), static_cast<dt_copy_kind_t>(9)),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dt_compute_free(c, p), DT_OK);
    EXPECT_EQ(dt_compute_free(c, nullptr), DT_OK);
    EXPECT_EQ(dt_compute_synchronize(c), DT_OK);
}

// Environment and params: each bad value names the variable and what is allowed.
class Settings : public ::testing::Test {
protected:
    void TearDown() override
    {
        unsetenv("DISTTRAIN_COMPUTE");
        unsetenv("DISTTRAIN_COMPUTE_DTYPE");
        unsetenv("DISTTRAIN_THREADS");
        unsetenv("DISTTRAIN_DEVICE");
    }
    dt_status_t create_from_env()
    {
        dt_compute_h h = nullptr;
        dt_status_t s = dt_compute_create(nullptr, &h);
        dt_compute_destroy(h);
        return s;
    }
};

TEST_F(Settings, UnknownPluginListsTheFoldersSearched)
{
    setenv("DISTTRAIN_COMPUTE", "nosuch", 1);
    EXPECT_EQ(create_from_env(), DT_ERR_PLUGIN_NOT_FOUND);
    EXPECT_NE(last().find("libdt-compute-nosuch.so"), std::string::npos) << last();
    setenv("DISTTRAIN_COMPUTE", "../x", 1);
    EXPECT_EQ(create_from_env(), DT_ERR_INVALID_CONFIG);
}

TEST_F(Settings, BadDtypeAndThreads)
{
    setenv("DISTTRAIN_COMPUTE_DTYPE", "fp8", 1);
    EXPECT_EQ(create_from_env(), DT_ERR_INVALID_CONFIG);
    EXPECT_NE(last().find("DISTTRAIN_COMPUTE_DTYPE"), std::string::npos) << last();
    unsetenv("DISTTRAIN_COMPUTE_DTYPE");
    setenv("DISTTRAIN_THREADS", "0", 1);
    EXPECT_EQ(create_from_env(), DT_ERR_INVALID_CONFIG);
    EXPECT_NE(last().find("DISTTRAIN_THREADS"), std::string::npos) << last();
    dt_compute_params_t p{};
    p.field_mask = DT_COMPUTE_PARAM_FIELD_COMPUTE_DTYPE;
    p.compute_dtype = DT_INT8;
    dt_compute_h h = nullptr;
    EXPECT_EQ(dt_compute_create(&p, &h), DT_ERR_INVALID_CONFIG);
    EXPECT_EQ(h, nullptr);
}

TEST_F(Settings, ADeviceThatIsNoOrdinalNamesTheVariable)
{
    // Digits only, as the cuda memory provider and the nccl transport read it.
    for (const char *bad : {"gpu1", "-1", " 1", "+1", "1 ", "0x1", ""}) {
        setenv("DISTTRAIN_DEVICE", bad, 1);
        if (*bad == '\0')
            continue; // empty counts as unset, as everywhere in the library
        EXPECT_EQ(create_from_env(), DT_ERR_INVALID_CONFIG) << bad;
        EXPECT_NE(last().find("DISTTRAIN_DEVICE"), std::string::npos) << last();
    }
    EXPECT_EQ(create_from_env(), DT_OK) << last(); // DISTTRAIN_DEVICE='' and the CPU
}

TEST_F(Settings, ThreadsAndAutoFromEnvironment)
{
    setenv("DISTTRAIN_THREADS", "1", 1);
    setenv("DISTTRAIN_COMPUTE", "auto", 1);
    dt_compute_h h = nullptr;
    ASSERT_EQ(dt_compute_create(nullptr, &h), DT_OK) << last();
    dt_compute_attr_t attr{};
    attr.field_mask = DT_COMPUTE_ATTR_FIELD_THREADS | DT_COMPUTE_ATTR_FIELD_PLUGIN;
    ASSERT_EQ(dt_compute_query(h, &attr), DT_OK);
    EXPECT_EQ(attr.threads, 1);
    EXPECT_STRNE(attr.plugin, ""); // onednn here, cudnn where a GPU is usable
    EXPECT_EQ(dt_compute_destroy(h), DT_OK);
    EXPECT_EQ(dt_compute_destroy(nullptr), DT_OK);
}

TEST(Version, NewerMinorIsRefused)
{
    dt_compute_h h = nullptr;
    EXPECT_EQ(dt_compute_create_versioned(DT_API_MAJOR, DT_API_MINOR + 1, nullptr, &h),
              DT_ERR_VERSION);
    EXPECT_EQ(h, nullptr);
}

} // namespace
} // namespace dt::test

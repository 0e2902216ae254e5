// A one-rank context with DISTTRAIN_MEMORY=fakedevice: the provider loads through the
// plugin path, DT_MEMORY_AUTO asks it, and a collective on its device memory is refused
// with a clear message before anything touches the buffers. A wrong DISTTRAIN_MEMORY
// fails dt_context_create naming the variable.
#include "fakedevice_test_util.h"

#include <disttrain/disttrain.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace fakedevice::test {
namespace {

// Sets DISTTRAIN_MEMORY for the scope.
struct MemoryEnv {
    explicit MemoryEnv(const char *value) { setenv("DISTTRAIN_MEMORY", value, 1); }
    ~MemoryEnv() { unsetenv("DISTTRAIN_MEMORY"); }
};

bool has(const std::string &text, const std::string &what)
{
    return text.find(what) != std::string::npos;
}

class Context : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(dt_context_create(nullptr, &ctx_), DT_OK) << dt_last_error();
    }
    void TearDown() override { dt_context_destroy(ctx_); }

    MemoryEnv memory_{"fakedevice"};
    Provider device_; // the user's own handle on the runtime, for device memory
    dt_context_h ctx_ = nullptr;
};

dt_op_params_t auto_memory()
{
    dt_op_params_t p{};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = DT_MEMORY_AUTO;
    return p;
}

TEST_F(Context, AutoOnHostMemoryRunsOnTheHost)
{
    std::vector<float> buf(8, 2.0f);
    dt_op_params_t p = auto_memory();
    ASSERT_EQ(dt_allreduce_ex(ctx_, "host", buf.data(), buf.data(), buf.size(), DT_FLOAT32,
                              DT_SUM, &p), DT_OK) << dt_last_error();
    EXPECT_EQ(buf[7], 2.0f); // one rank: the sum is the input
}

TEST_F(Context, AutoOnDeviceMemoryIsRefusedClearly)
{
    void *dev = device_.device_alloc(64 * sizeof(float));
    dt_op_params_t p = auto_memory();
    // Reaching the engine is the point: a CPU touch of dev would kill this process.
    EXPECT_EQ(dt_allreduce_ex(ctx_, "grad", dev, dev, 64, DT_FLOAT32, DT_SUM, &p),
              DT_ERR_UNSUPPORTED);
    std::string why = dt_last_error();
    EXPECT_TRUE(has(why, "device memory")) << why;
    EXPECT_TRUE(has(why, "no path of this build carries device memory yet")) << why;
    EXPECT_TRUE(has(why, "'grad'")) << why;

    // The router refuses it in the engine, which breaks the context like any failed
    // collective: later calls fail naming the cause rather than run on half a job.
    float one = 1.0f;
    EXPECT_EQ(dt_allreduce(ctx_, "after", &one, &one, 1, DT_FLOAT32, DT_SUM),
              DT_ERR_UNSUPPORTED);
    EXPECT_TRUE(has(dt_last_error(), "'grad'")) << dt_last_error();
    EXPECT_EQ(device_.ops().device_free(device_.m(), dev), DTP_OK);
}

TEST_F(Context, MixedHostAndDeviceBuffersAreAnError)
{
    void *dev = device_.device_alloc(16 * sizeof(float));
    std::vector<float> host(16);
    dt_op_params_t p = auto_memory();
    EXPECT_EQ(dt_allreduce_ex(ctx_, "mixed", host.data(), dev, 16, DT_FLOAT32, DT_SUM, &p),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(has(dt_last_error(), "fakedevice memory provider finds sendbuf in host"))
        << dt_last_error();
    EXPECT_EQ(device_.ops().device_free(device_.m(), dev), DTP_OK);
}

TEST(MemoryVariable, AMissingProviderFailsCreateNamingTheVariableAndTheFolders)
{
    MemoryEnv memory("nosuchdevice");
    dt_context_h ctx = nullptr;
    EXPECT_EQ(dt_context_create(nullptr, &ctx), DT_ERR_PLUGIN_NOT_FOUND);
    std::string why = dt_last_error();
    EXPECT_TRUE(has(why, "DISTTRAIN_MEMORY='nosuchdevice'")) << why;
    EXPECT_TRUE(has(why, "libdt-memory-nosuchdevice.so")) << why;
    EXPECT_TRUE(has(why, std::getenv("DISTTRAIN_PLUGIN_PATH")) ||
                has(why, "plugins/fakedevice")) << why;
    EXPECT_EQ(ctx, nullptr);
}

TEST(MemoryVariable, AMalformedNameFailsCreate)
{
    MemoryEnv memory("Fake-Device");
    dt_context_h ctx = nullptr;
    EXPECT_EQ(dt_context_create(nullptr, &ctx), DT_ERR_INVALID_CONFIG);
    EXPECT_TRUE(has(dt_last_error(), "DISTTRAIN_MEMORY='Fake-Device'")) << dt_last_error();
}

} // namespace
} // namespace fakedevice::test

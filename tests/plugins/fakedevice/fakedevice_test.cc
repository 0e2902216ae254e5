// SPDX-License-Identifier: Apache-2.0
// A one-rank context with DISTTRAIN_MEMORY=fakedevice: the provider loads through the
// plugin path, DT_MEMORY_AUTO asks it, and a collective on its device memory runs through
// staging (a CPU touch of the memory would kill the process) with the right values; a
// device that never finishes its copies is a time-out, not a hang; host memory called
// device memory, or the reverse, and a device ordinal the buffers are not on, are
// refused at the call. A wrong DISTTRAIN_MEMORY fails dt_context_create naming the
// variable.
#include "fakedevice_test_util.h"

#include <disttrain/disttrain.h>

#include <chrono>
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

TEST_F(Context, AutoOnDeviceMemoryRunsThroughStagingWithTheRightValues)
{
    constexpr size_t kCount = 1000;
    std::vector<float> in(kCount), out(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i)
        in[i] = static_cast<float>(i) * 0.25f;
    const size_t bytes = kCount * sizeof(float);
    void *src = device_.device_alloc(bytes);
    void *dst = device_.device_alloc(bytes);
    device_.copy(src, in.data(), bytes, DTP_MEMORY_COPY_HOST_TO_DEVICE);
    dt_op_params_t p = auto_memory();
    // Out of place, averaged over the one rank: dst must equal src.
    ASSERT_EQ(dt_allreduce_ex(ctx_, "grad", src, dst, kCount, DT_FLOAT32, DT_AVG, &p), DT_OK)
        << dt_last_error();
    device_.copy(out.data(), dst, bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST);
    EXPECT_EQ(out, in);
    // A broadcast from the only rank leaves its buffer as it was.
    ASSERT_EQ(dt_broadcast_ex(ctx_, "params", src, kCount, DT_FLOAT32, 0, &p), DT_OK)
        << dt_last_error();
    device_.copy(out.data(), src, bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST);
    EXPECT_EQ(out, in);
    EXPECT_EQ(device_.ops().device_free(device_.m(), src), DTP_OK);
    EXPECT_EQ(device_.ops().device_free(device_.m(), dst), DTP_OK);
}

TEST(ProducerStream, ACollectiveStartsAfterTheWorkQueuedOnTheCallersStream)
{
    // The user's runtime: every copy on its streams takes 200 ms.
    setenv("DISTTRAIN_FAKE_DEVICE_DELAY_US", "200000", 1);
    Provider user;
    unsetenv("DISTTRAIN_FAKE_DEVICE_DELAY_US");
    MemoryEnv memory("fakedevice");
    dt_context_h ctx = nullptr;
    ASSERT_EQ(dt_context_create(nullptr, &ctx), DT_OK) << dt_last_error();
    constexpr size_t kCount = 256;
    const size_t bytes = kCount * sizeof(float);
    std::vector<float> old_values(kCount, 1.0f), new_values(kCount, 7.0f), out(kCount);
    void *src = user.device_alloc(bytes);
    void *dst = user.device_alloc(bytes);
    user.copy(src, old_values.data(), bytes, DTP_MEMORY_COPY_HOST_TO_DEVICE);
    void *stream = nullptr;
    ASSERT_EQ(user.ops().stream_create(user.m(), 0, &stream), DTP_OK);
    // The producer's last write is still queued when the collective is called.
    ASSERT_EQ(user.ops().copy_async(user.m(), src, new_values.data(), bytes,
                                    DTP_MEMORY_COPY_HOST_TO_DEVICE, stream), DTP_OK);
    dt_op_params_t p{};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_STREAM;
    p.memory_type = DT_MEMORY_DEVICE;
    p.stream = stream;
    ASSERT_EQ(dt_allreduce_ex(ctx, "after the producer", src, dst, kCount, DT_FLOAT32, DT_SUM,
                              &p), DT_OK) << dt_last_error();
    user.copy(out.data(), dst, bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST);
    EXPECT_EQ(out, new_values) << "the collective read the buffer before its producer wrote it";
    EXPECT_EQ(dt_context_destroy(ctx), DT_OK);
    EXPECT_EQ(user.ops().stream_destroy(user.m(), stream), DTP_OK);
    EXPECT_EQ(user.ops().device_free(user.m(), src), DTP_OK);
    EXPECT_EQ(user.ops().device_free(user.m(), dst), DTP_OK);
}

TEST(StuckDevice, AWaitForTheDeviceEndsAtTheDeadlineNamingTheDevice)
{
    // Every copy of the context's provider takes 3 s; the deadline is 1 s.
    setenv("DISTTRAIN_FAKE_DEVICE_DELAY_US", "3000000", 1);
    setenv("DISTTRAIN_TIMEOUT", "1", 1);
    MemoryEnv memory("fakedevice");
    dt_context_h ctx = nullptr;
    ASSERT_EQ(dt_context_create(nullptr, &ctx), DT_OK) << dt_last_error();
    unsetenv("DISTTRAIN_FAKE_DEVICE_DELAY_US");
    unsetenv("DISTTRAIN_TIMEOUT");
    Provider device; // no delay of its own
    void *dev = device.device_alloc(64 * sizeof(float));
    dt_op_params_t p = auto_memory();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(dt_allreduce_ex(ctx, "stuck", dev, dev, 64, DT_FLOAT32, DT_SUM, &p),
              DT_ERR_TIMEOUT);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::string why = dt_last_error();
    EXPECT_TRUE(has(why, "'stuck'") && has(why, "the device did not finish")) << why;
    EXPECT_LT(took.count(), 2.9) << "the wait outlived the deadline";
    dt_context_destroy(ctx); // lets the queued copy finish first
    EXPECT_EQ(device.ops().device_free(device.m(), dev), DTP_OK);
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

TEST_F(Context, AMemoryTypeThePointerContradictsIsRefusedAtTheCallAndTheContextGoesOn)
{
    void *dev = device_.device_alloc(16 * sizeof(float));
    void *dev_out = device_.device_alloc(16 * sizeof(float));
    std::vector<float> host(16, 3.0f), out(16);
    dt_op_params_t p{};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = DT_MEMORY_DEVICE;
    EXPECT_EQ(dt_allreduce_ex(ctx_, "host as device", host.data(), out.data(), 16, DT_FLOAT32,
                              DT_SUM, &p), DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(has(dt_last_error(), "is host memory to the fakedevice memory provider"))
        << dt_last_error();
    // The other way round the CPU would read memory it cannot touch (SIGSEGV here).
    p.memory_type = DT_MEMORY_HOST;
    EXPECT_EQ(dt_allreduce_ex(ctx_, "device as host", dev, dev_out, 16, DT_FLOAT32, DT_SUM,
                              &p), DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(has(dt_last_error(), "is device memory (device 0) to the fakedevice memory "
                                     "provider"))
        << dt_last_error();
    EXPECT_EQ(dt_context_status(ctx_), DT_OK) << "a refused call broke the context";
    ASSERT_EQ(dt_allreduce(ctx_, "after", host.data(), out.data(), 16, DT_FLOAT32, DT_SUM),
              DT_OK) << dt_last_error();
    EXPECT_EQ(out, host);
    EXPECT_EQ(device_.ops().device_free(device_.m(), dev), DTP_OK);
    EXPECT_EQ(device_.ops().device_free(device_.m(), dev_out), DTP_OK);
}

TEST_F(Context, ADeviceOrdinalTheBuffersAreNotOnIsRefusedAtTheCall)
{
    void *dev = device_.device_alloc(16 * sizeof(float));
    dt_op_params_t p{};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_DEVICE;
    p.memory_type = DT_MEMORY_DEVICE;
    p.device = 7; // the fake has device 0 only
    EXPECT_EQ(dt_allreduce_ex(ctx_, "dev7", dev, dev, 16, DT_FLOAT32, DT_SUM, &p),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(has(dt_last_error(), "params->device is 7, but the fakedevice memory provider "
                                     "finds sendbuf on device 0"))
        << dt_last_error();
    p.device = 0;
    EXPECT_EQ(dt_allreduce_ex(ctx_, "dev0", dev, dev, 16, DT_FLOAT32, DT_SUM, &p), DT_OK)
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

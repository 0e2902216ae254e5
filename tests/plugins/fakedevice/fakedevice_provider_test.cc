// SPDX-License-Identifier: Apache-2.0
// The fake provider on its own, through its ABI table: pointer queries, copies that take
// the stream's delay, events that are not done before it, and device memory that the CPU
// really cannot touch.
#include "fakedevice_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <vector>

namespace fakedevice::test {
namespace {

// The delay each queued copy takes; long enough that a query right after queueing two
// copies cannot see them done on a loaded machine's scheduler, short enough for CI.
constexpr int kDelayUs = 50000;

int where(const Provider &p, const void *ptr)
{
    dt_memory_pointer_info_t info{sizeof(info), DT_MEMORY_VERSION, -7, -7};
    EXPECT_EQ(p.ops().pointer_query(p.m(), ptr, &info), DTP_OK);
    return info.memory_type;
}

TEST(FakeDevice, PointerQuerySaysDeviceForItsMemoryAndHostForMalloc)
{
    Provider p;
    void *dev = p.device_alloc(1000);
    std::vector<char> host(16);
    void *heap = std::malloc(64);
    EXPECT_EQ(where(p, dev), DTP_MEMORY_DEVICE);
    EXPECT_EQ(where(p, static_cast<char *>(dev) + 999), DTP_MEMORY_DEVICE);
    EXPECT_EQ(where(p, host.data()), DTP_MEMORY_HOST);
    EXPECT_EQ(where(p, heap), DTP_MEMORY_HOST);
    std::free(heap);
    EXPECT_EQ(p.ops().device_free(p.m(), dev), DTP_OK);
    EXPECT_NE(p.ops().device_free(p.m(), dev), DTP_OK) << "a double free is refused";
}

TEST(FakeDevice, CopiesRoundTripThroughTheStreamAfterTheDelay)
{
    setenv("DISTTRAIN_FAKE_DEVICE_DELAY_US", std::to_string(kDelayUs).c_str(), 1);
    Provider p; // reads the delay at init
    unsetenv("DISTTRAIN_FAKE_DEVICE_DELAY_US");
    const auto &ops = p.ops();
    std::vector<float> in(1024), out(1024, -1.0f);
    for (size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<float>(i) * 0.5f;
    const size_t bytes = in.size() * sizeof(float);
    void *dev = p.device_alloc(bytes);
    void *stream = nullptr, *event = nullptr, *pinned = nullptr;
    ASSERT_EQ(ops.stream_create(p.m(), 0, &stream), DTP_OK);
    ASSERT_EQ(ops.event_create(p.m(), &event), DTP_OK);
    EXPECT_EQ(ops.event_query(p.m(), event), DTP_OK) << "a new event counts as complete";
    ASSERT_EQ(ops.host_alloc(p.m(), bytes, &pinned), DTP_OK);

    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(ops.copy_async(p.m(), dev, in.data(), bytes, DTP_MEMORY_COPY_HOST_TO_DEVICE,
                             stream), DTP_OK);
    ASSERT_EQ(ops.copy_async(p.m(), out.data(), dev, bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST,
                             stream), DTP_OK);
    ASSERT_EQ(ops.event_record(p.m(), event, stream), DTP_OK);
    EXPECT_EQ(ops.event_query(p.m(), event), DTP_INPROGRESS);
    EXPECT_EQ(out[1], -1.0f) << "a copy ran before its delay: a missing wait would not show";

    while (ops.event_query(p.m(), event) == DTP_INPROGRESS)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(ops.event_query(p.m(), event), DTP_OK);
    EXPECT_GE(waited, std::chrono::microseconds(2 * kDelayUs)) << "two copies, two delays";
    EXPECT_EQ(out, in);

    EXPECT_EQ(ops.copy_async(p.m(), dev, in.data(), bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST,
                             stream), DTP_ERR_INVALID_ARGUMENT)
        << "a direction that does not match the pointers is refused";
    EXPECT_EQ(ops.event_destroy(p.m(), event), DTP_OK);
    EXPECT_EQ(ops.stream_destroy(p.m(), stream), DTP_OK);
    EXPECT_EQ(ops.host_free(p.m(), pinned), DTP_OK);
    EXPECT_EQ(ops.device_free(p.m(), dev), DTP_OK);
}

TEST(FakeDevice, ACpuReadOfDeviceMemoryCrashes)
{
    Provider p;
    auto *dev = static_cast<volatile const char *>(p.device_alloc(4096));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char c = dev[100]; // must fault: the device view is PROT_NONE
        _exit(c == 0 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child read device memory and exited with "
                                     << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), SIGSEGV);
    EXPECT_EQ(p.ops().device_free(p.m(), const_cast<char *>(dev)), DTP_OK);
}

} // namespace
} // namespace fakedevice::test

// SPDX-License-Identifier: Apache-2.0
// The nccl transport's wait_event and launch_on_stream on the mocks, one rank: an event of
// the cuda provider's runtime (here the mock CUDA runtime, opened by this test at the path
// the plugin opens, so both share it) makes the plugin's stream wait on the "GPU", and the
// collective launched after it reads its send buffer only once the producer's slow copy
// has run; a producer already done queues no wait; a collective launched on the
// producer's stream needs no wait at all, for that one call; a stream of another GPU is
// waited for instead; other runtimes' events and streams and DISTTRAIN_NCCL_HOST_WAIT=1
// are refused, leaving the order to the core.
#include "nccl_test_util.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace nccltest;
using tcptest::MemStore;

const dt_transport_v3_t &ops() { return *tcptest::plugin().ops; }

// The mock CUDA runtime's functions a producer uses, from the library the plugin opens.
struct MockRuntime {
    MockRuntime() {
        void *h = dlopen(CUDART_MOCK_PATH, RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) return;
        stream_create = reinterpret_cast<decltype(stream_create)>(
            dlsym(h, "cudaStreamCreateWithFlags"));
        stream_destroy = reinterpret_cast<decltype(stream_destroy)>(dlsym(h, "cudaStreamDestroy"));
        event_create = reinterpret_cast<decltype(event_create)>(
            dlsym(h, "cudaEventCreateWithFlags"));
        event_destroy = reinterpret_cast<decltype(event_destroy)>(dlsym(h, "cudaEventDestroy"));
        event_record = reinterpret_cast<decltype(event_record)>(dlsym(h, "cudaEventRecord"));
        copy = reinterpret_cast<decltype(copy)>(dlsym(h, "cudaMemcpyAsync"));
        reached = reinterpret_cast<decltype(reached)>(dlsym(h, "cudaMockEventReached"));
        set_device = reinterpret_cast<decltype(set_device)>(dlsym(h, "cudaSetDevice"));
    }
    bool ok() const {
        return stream_create && stream_destroy && event_create && event_destroy &&
               event_record && copy && reached && set_device;
    }
    decltype(&::cudaStreamCreateWithFlags) stream_create = nullptr;
    decltype(&::cudaStreamDestroy) stream_destroy = nullptr;
    decltype(&::cudaEventCreateWithFlags) event_create = nullptr;
    decltype(&::cudaEventDestroy) event_destroy = nullptr;
    decltype(&::cudaEventRecord) event_record = nullptr;
    cudaError_t (*copy)(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t) = nullptr;
    int (*reached)(cudaEvent_t) = nullptr; // the mock's: its stream got to the record
    decltype(&::cudaSetDevice) set_device = nullptr;
};

// A producer's stream on the mock runtime with an event for its progress; both go when it
// does (the stream last, which runs what is still queued on it).
struct Producer {
    explicit Producer(const MockRuntime &runtime) : rt(runtime) {
        rt.stream_create(&stream, 0);
        rt.event_create(&ready, 0);
    }
    ~Producer() {
        if (ready != nullptr) rt.event_destroy(ready);
        rt.stream_destroy(stream);
    }
    const MockRuntime &rt;
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr;
};

int lines_in(const std::string &path, const std::string &line) {
    std::ifstream in(path);
    int n = 0;
    for (std::string l; std::getline(in, l);) n += l == line;
    return n;
}

// The mock CUDA runtime's log of stream waits, in a fresh file for one test.
class CudaLog {
public:
    CudaLog()
        : path_(::testing::TempDir() + "nccl_wait_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".log"),
          env_("DISTTRAIN_MOCK_CUDA_LOG", path_.c_str()) {
        std::remove(path_.c_str());
    }
    ~CudaLog() { std::remove(path_.c_str()); }
    int count(const std::string &call) const { return lines_in(path_, call); }

private:
    std::string path_;
    ScopedEnv env_;
};

// What orders the allreduce after its producer: given the plugin instance, the producer's
// stream and the event recorded after its copy, it calls the plugin (or nothing).
using Order = std::function<void(void *transport, cudaStream_t, cudaEvent_t)>;

void by_event(void *transport, cudaStream_t, cudaEvent_t ready) {
    EXPECT_EQ(ops().wait_event(transport, "cuda", ready), DTP_OK);
}

void on_its_stream(void *transport, cudaStream_t stream, cudaEvent_t) {
    EXPECT_EQ(ops().launch_on_stream(transport, "cuda", stream), DTP_OK);
}

void unordered(void *, cudaStream_t, cudaEvent_t) {}

// A one-rank allreduce of a buffer whose fresh values a copy still queued on a slow
// producer stream (of GPU producer_gpu) writes, ordered by `order`; the log counts the
// stream waits queued. Returns the first element of the result.
float allreduce_after_slow_producer(const Order &order, int producer_gpu = 0) {
    ScopedEnv delay("DISTTRAIN_MOCK_CUDA_COPY_DELAY_US", "200000");
    MockRuntime rt;
    EXPECT_TRUE(rt.ok());
    if (!rt.ok()) return 0;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    EXPECT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    rt.set_device(producer_gpu);
    auto producer = std::make_unique<Producer>(rt);
    rt.set_device(0);
    std::vector<float> stale(256, -1.f), fresh(256, 5.f), out(256, 0.f);
    rt.copy(stale.data(), fresh.data(), stale.size() * sizeof(float), cudaMemcpyHostToDevice,
            producer->stream);
    rt.event_record(producer->ready, producer->stream);
    order(inst.transport, producer->stream, producer->ready);
    // The core may destroy the event at once: the wait holds the record it captured.
    rt.event_destroy(producer->ready);
    producer->ready = nullptr;
    dt_transport_request_t req{};
    EXPECT_EQ(ops().allreduce(inst.transport, stale.data(), out.data(), out.size(), DTP_FLOAT32,
                              DTP_SUM, &req), DTP_INPROGRESS) << inst.host.last_error();
    EXPECT_EQ(inst.wait(&req, 10000), DTP_OK) << inst.host.last_error();
    producer.reset(); // its stream runs the copy, if it is still queued
    EXPECT_EQ(inst.finalize(), DTP_OK);
    return out[0];
}

// The allreduce after a slow producer, ordered by `order`, reads `want` (5: the copy's
// data; -1: the stale data) with `waits` stream waits queued on the mock GPU.
void expect_order(const Order &order, int producer_gpu, float want, int waits) {
    UseMocks mocks;
    CudaLog log;
    EXPECT_EQ(allreduce_after_slow_producer(order, producer_gpu), want)
        << (want > 0 ? "the allreduce read its buffer before the producer's copy ran"
                     : "the allreduce waited without being ordered");
    EXPECT_EQ(log.count("cudaStreamWaitEvent"), waits);
}

TEST(NcclWait, TheCollectiveWaitsOnTheDeviceForTheProducersEvent) {
    expect_order(by_event, 0, 5.f, 1);
}

// The mocks model the order: without the wait, the same allreduce reads the stale data
// (so the tests above and below could not pass by luck).
TEST(NcclWait, WithoutTheWaitTheCollectiveReadsStaleData) {
    expect_order(unordered, 0, -1.f, 0);
}

// A blocking call's order: the collective runs on the producer's stream, no wait queued.
TEST(NcclWait, TheCollectiveRunsOnTheProducersStreamWithNoWait) {
    expect_order(on_its_stream, 0, 5.f, 0);
}

// NCCL's kernels cannot run on another GPU's stream: the plugin's stream waits for it.
TEST(NcclWait, AStreamOfAnotherGpuIsWaitedForInstead) {
    ScopedEnv gpus("DISTTRAIN_MOCK_CUDA_DEVICES", "2");
    expect_order(on_its_stream, 1, 5.f, 1);
}

// The stream is for the next collective call only, even one the plugin refuses: the
// allreduce after that refusal runs on the plugin's own stream, unordered, and reads the
// stale data.
TEST(NcclWait, TheProducersStreamHoldsForTheNextCallOnly) {
    UseMocks mocks;
    const float first = allreduce_after_slow_producer(
        [](void *transport, cudaStream_t stream, cudaEvent_t ready) {
            on_its_stream(transport, stream, ready);
            dt_transport_request_t refused{};
            int unused = 0;
            EXPECT_EQ(ops().allreduce(transport, &unused, &unused, 1, 99, DTP_SUM, &refused),
                      DTP_ERR_UNSUPPORTED); // dtype 99 has no NCCL type
        });
    EXPECT_EQ(first, -1.f);
}

TEST(NcclWait, OtherRuntimesStreamsAndCallsInsideABatchAreRefused) {
    UseMocks mocks;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    ASSERT_NE(ops().launch_on_stream, nullptr);
    int not_a_cuda_stream = 0;
    EXPECT_EQ(ops().launch_on_stream(inst.transport, "fakedevice", &not_a_cuda_stream),
              DTP_ERR_UNSUPPORTED);
    EXPECT_NE(inst.host.last_error().find("memory provider 'fakedevice' are not CUDA streams"),
              std::string::npos) << inst.host.last_error();
    EXPECT_EQ(ops().launch_on_stream(inst.transport, nullptr, nullptr), DTP_ERR_UNSUPPORTED);
    ASSERT_EQ(ops().batch_begin(inst.transport), DTP_OK);
    EXPECT_EQ(ops().launch_on_stream(inst.transport, "cuda", nullptr), DTP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(inst.host.last_error().find("inside a batch"), std::string::npos)
        << inst.host.last_error();
    ASSERT_EQ(ops().batch_end(inst.transport), DTP_OK);
    EXPECT_EQ(inst.finalize(), DTP_OK);
}

// A producer already done adds nothing to the plugin's stream: no cudaStreamWaitEvent.
TEST(NcclWait, AFinishedProducerQueuesNoWait) {
    UseMocks mocks;
    ScopedEnv polls("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "0");
    const std::string log = ::testing::TempDir() + "nccl_wait_done.log";
    std::remove(log.c_str());
    ScopedEnv logged("DISTTRAIN_MOCK_CUDA_LOG", log.c_str());
    MockRuntime rt;
    ASSERT_TRUE(rt.ok());
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    {
        Producer producer(rt);
        rt.event_record(producer.ready, producer.stream);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (rt.reached(producer.ready) == 0 && std::chrono::steady_clock::now() < until) {}
        ASSERT_EQ(rt.reached(producer.ready), 1);
        EXPECT_EQ(ops().wait_event(inst.transport, "cuda", producer.ready), DTP_OK)
            << inst.host.last_error();
        EXPECT_EQ(lines_in(log, "cudaStreamWaitEvent"), 0);
    }
    EXPECT_EQ(inst.finalize(), DTP_OK);
    std::remove(log.c_str());
}

TEST(NcclWait, OtherRuntimesEventsAreRefusedNamingThem) {
    UseMocks mocks;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    ASSERT_NE(ops().wait_event, nullptr);
    int not_a_cuda_event = 0;
    EXPECT_EQ(ops().wait_event(inst.transport, "fakedevice", &not_a_cuda_event),
              DTP_ERR_UNSUPPORTED);
    EXPECT_NE(inst.host.last_error().find("memory provider 'fakedevice' are not CUDA events"),
              std::string::npos) << inst.host.last_error();
    EXPECT_EQ(ops().wait_event(inst.transport, nullptr, &not_a_cuda_event),
              DTP_ERR_UNSUPPORTED);
    EXPECT_EQ(ops().wait_event(inst.transport, "cuda", nullptr), DTP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(inst.finalize(), DTP_OK);
}

TEST(NcclWait, HostWaitVariableRefusesEveryEventAndStream) {
    UseMocks mocks;
    ScopedEnv host_wait("DISTTRAIN_NCCL_HOST_WAIT", "1");
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    int event = 0; // never read: refused before
    EXPECT_EQ(ops().wait_event(inst.transport, "cuda", &event), DTP_ERR_UNSUPPORTED);
    EXPECT_NE(inst.host.last_error().find("DISTTRAIN_NCCL_HOST_WAIT=1"), std::string::npos)
        << inst.host.last_error();
    int stream = 0; // likewise
    EXPECT_EQ(ops().launch_on_stream(inst.transport, "cuda", &stream), DTP_ERR_UNSUPPORTED);
    EXPECT_NE(inst.host.last_error().find("DISTTRAIN_NCCL_HOST_WAIT=1"), std::string::npos)
        << inst.host.last_error();
    EXPECT_EQ(inst.finalize(), DTP_OK);
}

TEST(NcclWait, ABadHostWaitValueIsAConfigErrorNamingIt) {
    UseMocks mocks;
    ScopedEnv host_wait("DISTTRAIN_NCCL_HOST_WAIT", "yes");
    Instance inst(std::make_shared<MemStore>(), "job-token");
    EXPECT_EQ(inst.init(0, 1, 10000), DTP_ERR_INVALID_CONFIG);
    EXPECT_NE(inst.host.last_error().find("DISTTRAIN_NCCL_HOST_WAIT='yes'"), std::string::npos)
        << inst.host.last_error();
}

} // namespace

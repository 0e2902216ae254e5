// SPDX-License-Identifier: Apache-2.0
// The nccl transport's wait_event on the mocks, one rank: an event of the cuda provider's
// runtime (here the mock CUDA runtime, opened by this test at the path the plugin opens,
// so both share it) makes the plugin's stream wait on the "GPU", and the collective
// launched after it reads its send buffer only once the producer's slow copy has run; a
// producer already done queues no wait; other runtimes' events and
// DISTTRAIN_NCCL_HOST_WAIT=1 are refused, leaving the wait to the core.
#include "nccl_test_util.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <fstream>
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
    }
    bool ok() const {
        return stream_create && stream_destroy && event_create && event_destroy &&
               event_record && copy && reached;
    }
    decltype(&::cudaStreamCreateWithFlags) stream_create = nullptr;
    decltype(&::cudaStreamDestroy) stream_destroy = nullptr;
    decltype(&::cudaEventCreateWithFlags) event_create = nullptr;
    decltype(&::cudaEventDestroy) event_destroy = nullptr;
    decltype(&::cudaEventRecord) event_record = nullptr;
    cudaError_t (*copy)(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t) = nullptr;
    int (*reached)(cudaEvent_t) = nullptr; // the mock's: its stream got to the record
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

// A one-rank allreduce of a buffer whose fresh values a copy still queued on a slow
// producer stream writes; `wait` hands the event recorded after that copy to the plugin.
// Returns the first element of the result.
float allreduce_after_slow_producer(bool wait, const std::string &cuda_log) {
    ScopedEnv delay("DISTTRAIN_MOCK_CUDA_COPY_DELAY_US", "200000");
    ScopedEnv logged("DISTTRAIN_MOCK_CUDA_LOG", cuda_log.c_str());
    MockRuntime rt;
    EXPECT_TRUE(rt.ok());
    if (!rt.ok()) return 0;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    EXPECT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    auto producer = std::make_unique<Producer>(rt);
    std::vector<float> stale(256, -1.f), fresh(256, 5.f), out(256, 0.f);
    rt.copy(stale.data(), fresh.data(), stale.size() * sizeof(float), cudaMemcpyHostToDevice,
            producer->stream);
    rt.event_record(producer->ready, producer->stream);
    if (wait) {
        EXPECT_EQ(ops().wait_event(inst.transport, "cuda", producer->ready), DTP_OK)
            << inst.host.last_error();
    }
    // The core may destroy the event at once: the wait holds the record it captured.
    rt.event_destroy(producer->ready);
    producer->ready = nullptr;
    dt_transport_request_t req{};
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ops().allreduce(inst.transport, stale.data(), out.data(), out.size(), DTP_FLOAT32,
                              DTP_SUM, &req), DTP_INPROGRESS);
    EXPECT_EQ(inst.wait(&req, 10000), DTP_OK) << inst.host.last_error();
    const auto waited = std::chrono::steady_clock::now() - start;
    if (wait) {
        EXPECT_GE(waited, std::chrono::milliseconds(100)); // behind the copy
    }
    producer.reset(); // its stream runs the copy, if it is still queued
    EXPECT_EQ(inst.finalize(), DTP_OK);
    return out[0];
}

TEST(NcclWait, TheCollectiveWaitsOnTheDeviceForTheProducersEvent) {
    UseMocks mocks;
    const std::string log = ::testing::TempDir() + "nccl_wait_cuda.log";
    std::remove(log.c_str());
    EXPECT_EQ(allreduce_after_slow_producer(true, log), 5.f)
        << "the allreduce read its buffer before the producer's copy ran";
    EXPECT_EQ(lines_in(log, "cudaStreamWaitEvent"), 1);
    std::remove(log.c_str());
}

// The mocks model the order: without the wait, the same allreduce reads the stale data
// (so the test above could not pass by luck).
TEST(NcclWait, WithoutTheWaitTheCollectiveReadsStaleData) {
    UseMocks mocks;
    const std::string log = ::testing::TempDir() + "nccl_wait_none.log";
    std::remove(log.c_str());
    EXPECT_EQ(allreduce_after_slow_producer(false, log), -1.f);
    EXPECT_EQ(lines_in(log, "cudaStreamWaitEvent"), 0);
    std::remove(log.c_str());
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

TEST(NcclWait, HostWaitVariableRefusesEveryEvent) {
    UseMocks mocks;
    ScopedEnv host_wait("DISTTRAIN_NCCL_HOST_WAIT", "1");
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    int event = 0; // never read: refused before
    EXPECT_EQ(ops().wait_event(inst.transport, "cuda", &event), DTP_ERR_UNSUPPORTED);
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

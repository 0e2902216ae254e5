// SPDX-License-Identifier: Apache-2.0
// The nccl transport without a GPU: with the real CUDA runtime it declines "no GPU" with
// the driver's message; with the mock NCCL and CUDA runtime (one rank: collectives
// really compute on host memory) it gives the right values, times out a stuck init,
// fails pending requests on an asynchronous NCCL error or an abort, and makes every rank
// decline when one has no GPU.
#include "nccl_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace {

using namespace nccltest;
using tcptest::MemStore;

const dt_transport_v3_t &ops() { return *tcptest::plugin().ops; }

// A one-rank instance on the mocks.
struct OneRank {
    explicit OneRank(int timeout_ms = 10000)
        : inst(std::make_shared<MemStore>(), "job-token") {
        rc = inst.init(0, 1, timeout_ms);
    }
    Instance inst;
    int32_t rc;
};

TEST(NcclNoGpu, DeclinesWithTheDriversMessage) {
    // The real libcudart.so.13 and libnccl.so.2 (found through the plugin's RUNPATH).
    Instance inst(std::make_shared<MemStore>(), "job-token");
    int32_t rc = inst.init(0, 1, 10000);
    if (rc == DTP_OK) GTEST_SKIP() << "this machine has a GPU";
    const std::string err = inst.host.last_error();
    std::printf("decline: %s\n", err.c_str());
    EXPECT_EQ(rc, DTP_ERR_UNSUPPORTED) << err;
    EXPECT_NE(err.find("rank 0: no GPU: cudaGetDeviceCount failed: cudaError"),
              std::string::npos) << err;
    // The driver's own answer: 35 where no driver is installed (the build machines), 100
    // where a driver finds no device.
    EXPECT_TRUE(err.find("cudaErrorInsufficientDriver") != std::string::npos ||
                err.find("cudaErrorNoDevice") != std::string::npos) << err;
}

TEST(NcclLibraries, MissingNcclDeclinesNamingIt) {
    UseMocks mocks;
    ScopedEnv nccl("DISTTRAIN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    Instance inst(std::make_shared<MemStore>(), "job-token");
    EXPECT_EQ(inst.init(0, 1, 10000), DTP_ERR_UNSUPPORTED);
    const std::string err = inst.host.last_error();
    EXPECT_NE(err.find("cannot load NCCL '/nonexistent/libnccl.so.2': "), std::string::npos) << err;
    EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err; // dlerror()
}

TEST(NcclLibraries, MissingCudaRuntimeDeclinesNamingIt) {
    UseMocks mocks;
    ScopedEnv cuda("DISTTRAIN_CUDA_RUNTIME_LIBRARY", "/nonexistent/libcudart.so.13");
    Instance inst(std::make_shared<MemStore>(), "job-token");
    EXPECT_EQ(inst.init(0, 1, 10000), DTP_ERR_UNSUPPORTED);
    const std::string err = inst.host.last_error();
    EXPECT_NE(err.find("cannot load the CUDA runtime '/nonexistent/libcudart.so.13': "),
              std::string::npos) << err;
}

TEST(NcclMock, NoDeviceDeclines) {
    UseMocks mocks;
    ScopedEnv devices("DISTTRAIN_MOCK_CUDA_DEVICES", "0");
    OneRank one;
    EXPECT_EQ(one.rc, DTP_ERR_UNSUPPORTED);
    EXPECT_NE(one.inst.host.last_error().find("rank 0: no GPU: cudaGetDeviceCount failed: "
                                              "cudaErrorNoDevice"),
              std::string::npos) << one.inst.host.last_error();
}

TEST(NcclMock, BadDeviceOrdinalIsAConfigError) {
    UseMocks mocks;
    ScopedEnv device("DISTTRAIN_DEVICE", "3");
    OneRank one;
    EXPECT_EQ(one.rc, DTP_ERR_INVALID_CONFIG);
    EXPECT_NE(one.inst.host.last_error().find("DISTTRAIN_DEVICE='3'"), std::string::npos)
        << one.inst.host.last_error();
}

// Digits only, as the cuda memory provider and the core read it: spaces, a sign or a
// base prefix are refused alike, though the mock's four GPUs would make " 1" a GPU.
TEST(NcclMock, AnOrdinalThatIsNotJustDigitsIsAConfigError) {
    UseMocks mocks;
    ScopedEnv devices("DISTTRAIN_MOCK_CUDA_DEVICES", "4");
    for (const char *bad : {" 1", "+1", "1 ", "1x", "0x1", "-1", "99999999999"}) {
        ScopedEnv device("DISTTRAIN_DEVICE", bad);
        OneRank one;
        const std::string err = one.inst.host.last_error();
        EXPECT_EQ(one.rc, DTP_ERR_INVALID_CONFIG) << "'" << bad << "': " << err;
        EXPECT_NE(err.find(std::string("DISTTRAIN_DEVICE='") + bad + "' is not a GPU ordinal: "
                           "write the GPU's number in digits only"),
                  std::string::npos) << err;
    }
    ScopedEnv device("DISTTRAIN_DEVICE", "1");
    OneRank one;
    EXPECT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
}

TEST(NcclMock, AnswersDeviceOnlyWithoutControl) {
    UseMocks mocks;
    OneRank one;
    ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
    dt_transport_caps_t caps{};
    caps.struct_size = sizeof(caps);
    caps.abi_version = DT_TRANSPORT_VERSION;
    ASSERT_EQ(ops().query(one.inst.transport, &caps), DTP_OK);
    EXPECT_EQ(caps.p2p_memory, 0u);
    EXPECT_EQ(caps.native_memory, static_cast<uint32_t>(DT_TRANSPORT_MEMORY_DEVICE));
    EXPECT_EQ(caps.flags & DT_TRANSPORT_CAP_CONTROL, 0u);
    ASSERT_NE(ops().allreduce, nullptr);
    ASSERT_NE(ops().alltoall, nullptr);
    char b = 0;
    dt_transport_request_t req{};
    EXPECT_EQ(one.inst.isend(0, 1, &b, 1, &req), DTP_ERR_UNSUPPORTED);
}

// Every collective, in both of the mock's enqueue modes (a non-blocking communicator
// answers ncclSuccess or ncclInProgress).
class NcclMockValues : public ::testing::TestWithParam<const char *> {};

TEST_P(NcclMockValues, OneRankCollectivesGiveTheRightValues) {
    UseMocks mocks;
    ScopedEnv enqueue("DISTTRAIN_MOCK_NCCL_ENQUEUE", GetParam());
    ScopedEnv polls("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "3");
    CallLog log;
    {
        OneRank one;
        ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
        void *t = one.inst.transport;
        const size_t n = 1000;
        struct Dtype { int32_t dtype; size_t size; };
        for (Dtype d : {Dtype{DTP_FLOAT32, 4}, Dtype{DTP_FLOAT64, 8}, Dtype{DTP_FLOAT16, 2},
                        Dtype{DTP_BFLOAT16, 2}, Dtype{DTP_INT8, 1}, Dtype{DTP_UINT8, 1},
                        Dtype{DTP_INT32, 4}, Dtype{DTP_INT64, 8}}) {
            std::vector<uint8_t> in(n * d.size), out(n * d.size + 16, 0xEE);
            tcptest::fill(in, static_cast<uint32_t>(d.dtype));
            for (int32_t op : {DTP_SUM, DTP_AVG, DTP_MIN, DTP_MAX, DTP_PROD}) {
                std::fill(out.begin(), out.end(), 0xEE);
                dt_transport_request_t req{};
                ASSERT_EQ(ops().allreduce(t, in.data(), out.data(), n, d.dtype, op, &req),
                          DTP_INPROGRESS) << one.inst.host.last_error();
                ASSERT_EQ(one.inst.wait(&req, 10000), DTP_OK) << one.inst.host.last_error();
                EXPECT_EQ(req.bytes, n * d.size);
                EXPECT_EQ(std::memcmp(out.data(), in.data(), n * d.size), 0)
                    << "allreduce dtype " << d.dtype << " op " << op;
                EXPECT_EQ(out[n * d.size], 0xEE) << "allreduce wrote past its end";
            }
            struct Case { const char *name; std::function<int32_t(dt_transport_request_t *)> start; };
            std::vector<uint8_t> bc = in;
            std::fill(out.begin(), out.end(), 0xEE);
            for (const Case &c : std::vector<Case>{
                     {"broadcast", [&](dt_transport_request_t *r) {
                          return ops().broadcast(t, bc.data(), n, d.dtype, 0, r); }},
                     {"allgather", [&](dt_transport_request_t *r) {
                          return ops().allgather(t, in.data(), out.data(), n, d.dtype, r); }},
                     {"reduce_scatter", [&](dt_transport_request_t *r) {
                          return ops().reduce_scatter(t, in.data(), out.data(), n, d.dtype,
                                                      DTP_SUM, r); }},
                     {"alltoall", [&](dt_transport_request_t *r) {
                          return ops().alltoall(t, in.data(), out.data(), n, d.dtype, r); }}}) {
                std::fill(out.begin(), out.end(), 0xEE);
                dt_transport_request_t req{};
                ASSERT_EQ(c.start(&req), DTP_INPROGRESS) << c.name << one.inst.host.last_error();
                ASSERT_EQ(one.inst.wait(&req, 10000), DTP_OK) << c.name << one.inst.host.last_error();
                EXPECT_EQ(req.bytes, n * d.size) << c.name;
                if (std::string(c.name) == "broadcast") {
                    EXPECT_EQ(bc, in);
                } else {
                    EXPECT_EQ(std::memcmp(out.data(), in.data(), n * d.size), 0)
                        << c.name << " dtype " << d.dtype;
                    EXPECT_EQ(out[n * d.size], 0xEE) << c.name << " wrote past its end";
                }
            }
        }
        // Several in flight at once complete in order.
        std::vector<float> a(64, 1.5f), b(64, 0.f);
        dt_transport_request_t reqs[4]{};
        for (auto &r : reqs) {
            ASSERT_EQ(ops().allreduce(t, a.data(), b.data(), a.size(), DTP_FLOAT32, DTP_SUM, &r),
                      DTP_INPROGRESS);
        }
        dt_transport_request_t bar{};
        ASSERT_EQ(ops().barrier(t, &bar), DTP_INPROGRESS);
        EXPECT_EQ(one.inst.wait(&bar, 10000), DTP_OK);
        for (auto &r : reqs) EXPECT_EQ(r.status, DTP_OK);
        EXPECT_EQ(b, a);
        EXPECT_EQ(one.inst.finalize(), DTP_OK);
    }
    // A clean finalize finalizes and destroys the communicator; it never aborts it.
    EXPECT_EQ(log.count("ncclCommFinalize"), 1);
    EXPECT_EQ(log.count("ncclCommDestroy"), 1);
    EXPECT_EQ(log.count("ncclCommAbort"), 0);
}

INSTANTIATE_TEST_SUITE_P(Enqueue, NcclMockValues, ::testing::Values("async", "sync"));

TEST(NcclMock, UnknownDtypeOrOperatorIsRefused) {
    UseMocks mocks;
    OneRank one;
    ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
    float x = 0, y = 0;
    dt_transport_request_t req{};
    EXPECT_EQ(ops().allreduce(one.inst.transport, &x, &y, 1, 99, DTP_SUM, &req),
              DTP_ERR_UNSUPPORTED);
    EXPECT_NE(one.inst.host.last_error().find("dtype 99 has no NCCL type"), std::string::npos);
    EXPECT_EQ(ops().allreduce(one.inst.transport, &x, &y, 1, DTP_FLOAT32, 42, &req),
              DTP_ERR_UNSUPPORTED);
    EXPECT_NE(one.inst.host.last_error().find("operator 42"), std::string::npos);
    EXPECT_EQ(ops().broadcast(one.inst.transport, &x, 1, DTP_FLOAT32, 1, &req),
              DTP_ERR_INVALID_ARGUMENT);
}

TEST(NcclMock, StuckInitTimesOutAndAborts) {
    UseMocks mocks;
    ScopedEnv stuck("DISTTRAIN_MOCK_NCCL_INIT", "stuck");
    CallLog log;
    const auto start = std::chrono::steady_clock::now();
    OneRank one(400);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(one.rc, DTP_ERR_TIMEOUT);
    EXPECT_GE(ms, 400);
    EXPECT_LT(ms, 400 + 500) << "init overran its timeout";
    EXPECT_NE(one.inst.host.last_error().find("did not come up within the init timeout of "
                                              "400 ms; ncclCommAbort was called"),
              std::string::npos) << one.inst.host.last_error();
    EXPECT_EQ(log.count("ncclCommAbort"), 1);
    EXPECT_EQ(one.inst.transport, nullptr);
}

TEST(NcclMock, FailedInitIsReportedAndAborted) {
    UseMocks mocks;
    ScopedEnv fail("DISTTRAIN_MOCK_NCCL_INIT", "fail");
    CallLog log;
    OneRank one;
    EXPECT_EQ(one.rc, DTP_ERR_TRANSPORT);
    EXPECT_NE(one.inst.host.last_error().find("creating the communicator (rank 0 of 1, GPU 0) "
                                              "failed: invalid usage (mock) (5): mock: "
                                              "communicator set-up failed"),
              std::string::npos) << one.inst.host.last_error();
    EXPECT_EQ(log.count("ncclCommAbort"), 1);
}

TEST(NcclMock, DuplicateGpuIsExplained) {
    UseMocks mocks;
    ScopedEnv dup("DISTTRAIN_MOCK_NCCL_INIT", "duplicate");
    OneRank one;
    EXPECT_EQ(one.rc, DTP_ERR_TRANSPORT);
    const std::string err = one.inst.host.last_error();
    EXPECT_NE(err.find("Duplicate GPU detected"), std::string::npos) << err;
    EXPECT_NE(err.find("two ranks share one GPU, which NCCL up to 2.29 refuses"),
              std::string::npos) << err;
}

TEST(NcclMock, AsyncErrorFailsThePendingRequest) {
    UseMocks mocks;
    ScopedEnv after("DISTTRAIN_MOCK_NCCL_ASYNC_ERROR_AFTER", "2");
    CallLog log;
    OneRank one;
    ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
    void *t = one.inst.transport;
    std::vector<float> a(16, 2.f), b(16, 0.f);
    dt_transport_request_t first{}, second{}, third{};
    ASSERT_EQ(ops().allreduce(t, a.data(), b.data(), 16, DTP_FLOAT32, DTP_SUM, &first),
              DTP_INPROGRESS);
    EXPECT_EQ(one.inst.wait(&first, 10000), DTP_OK);
    ASSERT_EQ(ops().allreduce(t, a.data(), b.data(), 16, DTP_FLOAT32, DTP_SUM, &second),
              DTP_INPROGRESS);
    EXPECT_EQ(one.inst.wait(&second, 10000), DTP_ERR_TRANSPORT);
    const std::string err = one.inst.host.last_error();
    EXPECT_NE(err.find("the communicator failed: remote process exited or there was a "
                       "network error (mock) (6): mock: a remote rank exited"),
              std::string::npos) << err;
    EXPECT_EQ(log.count("ncclCommAbort"), 1);
    // The communicator is gone: later calls fail at once with the same reason.
    EXPECT_EQ(ops().allreduce(t, a.data(), b.data(), 16, DTP_FLOAT32, DTP_SUM, &third),
              DTP_ERR_TRANSPORT);
    EXPECT_EQ(third.status, DTP_ERR_TRANSPORT);
    EXPECT_EQ(ops().progress(t, 0), DTP_ERR_TRANSPORT);
}

TEST(NcclMock, AbortFailsPendingAndAbortsTheCommunicator) {
    UseMocks mocks;
    ScopedEnv never("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "never");
    CallLog log;
    OneRank one;
    ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
    std::vector<float> a(16, 2.f), b(16, 0.f);
    dt_transport_request_t req{};
    ASSERT_EQ(ops().allreduce(one.inst.transport, a.data(), b.data(), 16, DTP_FLOAT32, DTP_SUM,
                              &req), DTP_INPROGRESS);
    one.inst.spin(20);
    EXPECT_EQ(req.status, DTP_INPROGRESS); // progress never waits for the GPU
    EXPECT_EQ(ops().abort(one.inst.transport), DTP_OK);
    EXPECT_EQ(req.status, DTP_ERR_ABORTED);
    EXPECT_EQ(log.count("ncclCommAbort"), 1);
    EXPECT_EQ(one.inst.finalize(), DTP_OK);
    EXPECT_EQ(log.count("ncclCommDestroy"), 0);
}

TEST(NcclMock, FinalizeWithPendingWorkAborts) {
    UseMocks mocks;
    ScopedEnv never("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "never");
    CallLog log;
    OneRank one;
    ASSERT_EQ(one.rc, DTP_OK) << one.inst.host.last_error();
    float x = 1, y = 0;
    dt_transport_request_t req{};
    ASSERT_EQ(ops().allreduce(one.inst.transport, &x, &y, 1, DTP_FLOAT32, DTP_SUM, &req),
              DTP_INPROGRESS);
    EXPECT_EQ(one.inst.finalize(), DTP_OK);
    EXPECT_EQ(req.status, DTP_ERR_ABORTED);
    EXPECT_EQ(log.count("ncclCommAbort"), 1);
}

// Two ranks as two processes with a folder store: each has its own environment.
std::string rank1_without_gpu(int rank) {
    return std::string("DISTTRAIN_NCCL_LIBRARY=") + NCCL_MOCK_PATH +
           ";DISTTRAIN_CUDA_RUNTIME_LIBRARY=" + CUDART_MOCK_PATH +
           ";DISTTRAIN_MOCK_CUDA_DEVICES=" + (rank == 1 ? "0" : "1");
}

std::string both_with_gpu(int) {
    return std::string("DISTTRAIN_NCCL_LIBRARY=") + NCCL_MOCK_PATH +
           ";DISTTRAIN_CUDA_RUNTIME_LIBRARY=" + CUDART_MOCK_PATH +
           ";DISTTRAIN_MOCK_CUDA_DEVICES=1";
}

TEST(NcclProcesses, OneRankWithoutGpuMakesBothDeclineAlike) {
    auto results = init_in_processes(2, rank1_without_gpu, 10000);
    ASSERT_EQ(results.size(), 2u);
    for (const auto &r : results) EXPECT_EQ(r.status, DTP_ERR_UNSUPPORTED) << r.error;
    EXPECT_EQ(results[0].error, results[1].error);
    EXPECT_NE(results[0].error.find("declined on every rank"), std::string::npos)
        << results[0].error;
    EXPECT_NE(results[0].error.find("rank 1: no GPU: cudaGetDeviceCount failed: "
                                    "cudaErrorNoDevice"),
              std::string::npos) << results[0].error;
    EXPECT_EQ(results[0].error.find("rank 0:"), std::string::npos) << results[0].error;
}

TEST(NcclProcesses, TwoRanksComeUpThroughTheStore) {
    auto results = init_in_processes(2, both_with_gpu, 10000);
    ASSERT_EQ(results.size(), 2u);
    for (const auto &r : results) EXPECT_EQ(r.status, DTP_OK) << r.error;
}

// Rank 1 exits inside its first allreduce, before its part left (the mock's
// DISTTRAIN_MOCK_NCCL_EXIT_AT): rank 0's allreduce fails with NCCL's remote error naming
// the dead rank, well within its wait.
std::string rank1_dies(int rank) {
    return both_with_gpu(rank) + ";DISTTRAIN_MOCK_NCCL_EXIT_AT=1:1";
}

int32_t one_allreduce(Instance &inst, int) {
    std::vector<float> a(1024, 1.f), b(1024, 0.f);
    dt_transport_request_t req{};
    int32_t rc = ops().allreduce(inst.transport, a.data(), b.data(), a.size(), DTP_FLOAT32,
                                 DTP_SUM, &req);
    if (rc != DTP_INPROGRESS) return rc;
    auto start = std::chrono::steady_clock::now();
    rc = inst.wait(&req, 20000);
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) return -999;
    return rc;
}

TEST(NcclProcesses, ARankDyingMidAllreduceFailsTheSurvivorsAllreduce) {
    auto results = init_in_processes(2, rank1_dies, 10000, one_allreduce);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[1].status, -12345) << results[1].error; // died: wrote no result
    EXPECT_EQ(results[0].status, DTP_ERR_TRANSPORT) << results[0].error;
    EXPECT_NE(results[0].error.find("the communicator failed: remote process exited or "
                                    "there was a network error (mock) (6): mock: rank 1 (pid"),
              std::string::npos) << results[0].error;
}

TEST(NcclProcesses, TwoRanksReduceAcrossProcesses) {
    auto results = init_in_processes(2, both_with_gpu, 10000, [](Instance &inst, int rank) {
        std::vector<int64_t> a(300, rank + 1), b(300, 0);
        dt_transport_request_t req{};
        int32_t rc = ops().allreduce(inst.transport, a.data(), b.data(), a.size(), DTP_INT64,
                                     DTP_SUM, &req);
        if (rc == DTP_INPROGRESS) rc = inst.wait(&req, 20000);
        if (rc != DTP_OK) return rc;
        return b == std::vector<int64_t>(300, 3) ? DTP_OK : DTP_ERR_INTERNAL;
    });
    ASSERT_EQ(results.size(), 2u);
    for (const auto &r : results) EXPECT_EQ(r.status, DTP_OK) << r.error;
}

} // namespace

// SPDX-License-Identifier: Apache-2.0
// The nccl transport's batches (batch_begin/batch_end: one NCCL group) and group
// communicators (split: ncclCommSplit) on the mocks, one rank; several ranks run them
// through the core in test_device_transport.py.
#include "nccl_test_util.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace nccltest;
using tcptest::MemStore;

const dt_transport_v3_t &ops() { return *tcptest::plugin().ops; }

TEST(NcclBatch, ABatchIsOneGroupAndCompletesTogether) {
    UseMocks mocks;
    ScopedEnv polls("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "2");
    CallLog log;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    void *t = inst.transport;
    ASSERT_NE(ops().batch_begin, nullptr);
    std::vector<std::vector<float>> in(3), out(3);
    dt_transport_request_t reqs[3]{};
    ASSERT_EQ(ops().batch_begin(t), DTP_OK);
    EXPECT_EQ(ops().batch_begin(t), DTP_ERR_INVALID_ARGUMENT); // no nesting
    for (int i = 0; i < 3; ++i) {
        in[i].assign(100 + 10 * i, 1.0f + i);
        out[i].assign(in[i].size(), 0.f);
        ASSERT_EQ(ops().allreduce(t, in[i].data(), out[i].data(), in[i].size(), DTP_FLOAT32,
                                  DTP_SUM, &reqs[i]), DTP_INPROGRESS);
    }
    inst.spin(5);
    for (auto &r : reqs) EXPECT_EQ(r.status, DTP_INPROGRESS); // held until batch_end
    EXPECT_EQ(log.count("ncclGroupEnd 3"), 0);
    ASSERT_EQ(ops().batch_end(t), DTP_OK);
    EXPECT_EQ(inst.wait(&reqs[2], 10000), DTP_OK) << inst.host.last_error();
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(reqs[i].status, DTP_OK);
        EXPECT_EQ(out[i], in[i]);
    }
    EXPECT_EQ(log.count("ncclGroupEnd 3"), 1); // one group of three collectives
    EXPECT_EQ(ops().batch_end(t), DTP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(inst.finalize(), DTP_OK);
}

TEST(NcclSplit, AChildCommunicatorRunsCollectivesAndGoesWithTheParent) {
    UseMocks mocks;
    CallLog log;
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    void *none = reinterpret_cast<void *>(1);
    ASSERT_EQ(ops().split(inst.transport, -1, 0, 0, 5000, &none), DTP_OK)
        << inst.host.last_error();
    EXPECT_EQ(none, nullptr); // no color: no child
    void *child = nullptr;
    ASSERT_EQ(ops().split(inst.transport, 0, 0, 1, 5000, &child), DTP_OK)
        << inst.host.last_error();
    ASSERT_NE(child, nullptr);
    EXPECT_EQ(log.count("ncclCommSplit"), 2);
    std::vector<double> a(50, 2.5), b(50, 0.0);
    dt_transport_request_t req{};
    ASSERT_EQ(ops().allreduce(child, a.data(), b.data(), a.size(), DTP_FLOAT64, DTP_AVG, &req),
              DTP_INPROGRESS);
    for (int i = 0; i < 10000 && req.status == DTP_INPROGRESS; ++i) ops().progress(child, 1);
    EXPECT_EQ(req.status, DTP_OK) << inst.host.last_error();
    EXPECT_EQ(b, a);
    // Aborting the parent aborts the child's pending work too.
    dt_transport_request_t pending{};
    {
        ScopedEnv never("DISTTRAIN_MOCK_CUDA_EVENT_POLLS", "never");
        ASSERT_EQ(ops().allreduce(child, a.data(), b.data(), a.size(), DTP_FLOAT64, DTP_SUM,
                                  &pending), DTP_INPROGRESS);
        ops().progress(child, 0);
    }
    EXPECT_EQ(ops().abort(inst.transport), DTP_OK);
    EXPECT_EQ(pending.status, DTP_ERR_ABORTED);
    EXPECT_EQ(ops().finalize(child), DTP_OK);
    EXPECT_EQ(inst.finalize(), DTP_OK);
    EXPECT_EQ(log.count("ncclCommAbort"), 2);
}

TEST(NcclSplit, WithoutNcclCommSplitASplitIsUnsupportedNamingWhy) {
    UseMocks mocks;
    ScopedEnv old("DISTTRAIN_NCCL_LIBRARY", NCCL_MOCK_NOSPLIT_PATH);
    Instance inst(std::make_shared<MemStore>(), "job-token");
    ASSERT_EQ(inst.init(0, 1, 10000), DTP_OK) << inst.host.last_error();
    void *child = nullptr;
    EXPECT_EQ(ops().split(inst.transport, 0, 0, 1, 5000, &child), DTP_ERR_UNSUPPORTED);
    EXPECT_EQ(child, nullptr);
    EXPECT_NE(inst.host.last_error().find("has no ncclCommSplit"), std::string::npos)
        << inst.host.last_error();
    EXPECT_EQ(inst.finalize(), DTP_OK);
}

} // namespace

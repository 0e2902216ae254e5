/* SPDX-License-Identifier: Apache-2.0 */
// Where a GPU training step's time goes, op by op, with DISTTRAIN_CUDNN_PROFILE=1: for
// every compute op, its calls, the host time spent inside the call (launch cost, and the
// waits of the ops that synchronize) and the GPU time between CUDA events recorded on the
// stream around it. The table goes to stderr when the instance ends. It covers the ops
// between the first and the last call of synchronize where there were two (a program that
// synchronizes after its warm-up and after its timed steps gets the steady state, without
// the first calls' algorithm searches and module loads), else all of them. The GPU times
// add up to the stream's busy time inside ops; where the GPU waits for the host, the wait
// counts in the op whose launch it waited for.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace dtp::cudnn {

enum ProfiledOp : int {
    kOpSynchronize, kOpAlloc, kOpFree, kOpMemcpy, kOpFill, kOpCast, kOpMatmul, kOpAdd,
    kOpAxpby, kOpScale, kOpBiasAdd, kOpBiasBackward, kOpReluForward, kOpReluBackward,
    kOpConvForward, kOpConvBackwardData, kOpConvBackwardWeights, kOpPoolWorkspaceSize,
    kOpPoolForward, kOpPoolBackward, kOpBatchnormForwardTraining,
    kOpBatchnormForwardInference, kOpBatchnormBackward, kOpSoftmaxXentForward,
    kOpSoftmaxXentBackward, kOpSgdUpdate, kOpAdamUpdate, kOpBatchnormReluForwardTraining,
    kOpBatchnormReluForwardInference, kOpBatchnormReluBackward, kOpAddRelu,
    kOpReluBackwardSum, kOpBatchnormAddReluForwardTraining,
    kOpBatchnormAddReluForwardInference, kOpCount
};

class Profile {
public:
    Profile() : rows_(kOpCount) {}
    ~Profile();
    Profile(const Profile &) = delete;
    Profile &operator=(const Profile &) = delete;

    // Around one call of op on stream: events before and after, host time between.
    void begin(int op, cudaStream_t stream);
    void end(int op, cudaStream_t stream);
    // Called by synchronize, once the stream is idle: the window's edge.
    void mark();
    // Waits for the recorded events and prints the table to stderr.
    void report(const char *device_name);

private:
    struct Row {
        uint64_t calls = 0;
        double host_ms = 0, gpu_ms = 0;
    };
    struct Snapshot {
        std::vector<Row> rows;
        std::chrono::steady_clock::time_point at;
    };
    struct Pending {
        int op;
        cudaEvent_t start, end;
    };
    cudaEvent_t event();
    void collect(); // the elapsed times of every pending pair, after they complete
    std::vector<Row> rows_;
    std::vector<Pending> pending_;
    std::vector<cudaEvent_t> spare_;
    cudaEvent_t open_ = nullptr;
    std::chrono::steady_clock::time_point entered_;
    std::chrono::steady_clock::time_point first_{}, last_{};
    std::vector<Snapshot> marks_; // the first and the latest
};

// Times one call when the instance has a profile; costs one branch when it has none.
class ProfileScope {
public:
    ProfileScope(Profile *p, int op, cudaStream_t s) : p_(p), op_(op), s_(s)
    {
        if (p_ != nullptr)
            p_->begin(op_, s_);
    }
    ~ProfileScope()
    {
        if (p_ != nullptr)
            p_->end(op_, s_);
    }
    ProfileScope(const ProfileScope &) = delete;
    ProfileScope &operator=(const ProfileScope &) = delete;

private:
    Profile *p_;
    int op_;
    cudaStream_t s_;
};

bool profile_requested(); // DISTTRAIN_CUDNN_PROFILE=1

} // namespace dtp::cudnn

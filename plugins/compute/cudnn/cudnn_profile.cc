// SPDX-License-Identifier: Apache-2.0
#include "cudnn_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace dtp::cudnn {

namespace {

const char *const kOpNames[kOpCount] = {
    "synchronize", "alloc", "free", "memcpy", "fill", "cast", "matmul", "add", "axpby",
    "scale", "bias_add", "bias_backward", "relu_forward", "relu_backward", "conv_forward",
    "conv_backward_data", "conv_backward_weights", "pool_workspace_size", "pool_forward",
    "pool_backward", "batchnorm_forward_training", "batchnorm_forward_inference",
    "batchnorm_backward", "softmax_xent_forward", "softmax_xent_backward", "sgd_update",
    "adam_update", "batchnorm_relu_forward_training", "batchnorm_relu_forward_inference",
    "batchnorm_relu_backward", "add_relu", "relu_backward_sum",
    "batchnorm_add_relu_forward_training", "batchnorm_add_relu_forward_inference",
};

// Pairs kept before their times are read: bounded so that a long run holds few events.
constexpr size_t kMaxPending = 8192;

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

} // namespace

bool profile_requested()
{
    const char *v = std::getenv("DISTTRAIN_CUDNN_PROFILE");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

Profile::~Profile()
{
    for (const auto &p : pending_) {
        cudaEventDestroy(p.start);
        cudaEventDestroy(p.end);
    }
    for (auto e : spare_)
        cudaEventDestroy(e);
    if (open_ != nullptr)
        cudaEventDestroy(open_);
}

cudaEvent_t Profile::event()
{
    if (!spare_.empty()) {
        cudaEvent_t e = spare_.back();
        spare_.pop_back();
        return e;
    }
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    return e;
}

void Profile::begin(int, cudaStream_t stream)
{
    open_ = event();
    cudaEventRecord(open_, stream);
    entered_ = std::chrono::steady_clock::now();
    if (first_ == std::chrono::steady_clock::time_point{})
        first_ = entered_;
}

void Profile::end(int op, cudaStream_t stream)
{
    last_ = std::chrono::steady_clock::now();
    cudaEvent_t done = event();
    cudaEventRecord(done, stream);
    rows_[op].calls += 1;
    rows_[op].host_ms += ms_between(entered_, last_);
    pending_.push_back({op, open_, done});
    open_ = nullptr;
    if (pending_.size() >= kMaxPending)
        collect();
}

void Profile::collect()
{
    for (const auto &p : pending_) {
        float ms = 0;
        if (cudaEventSynchronize(p.end) == cudaSuccess &&
            cudaEventElapsedTime(&ms, p.start, p.end) == cudaSuccess)
            rows_[p.op].gpu_ms += ms;
        spare_.push_back(p.start);
        spare_.push_back(p.end);
    }
    pending_.clear();
}

void Profile::mark()
{
    collect();
    Snapshot now{rows_, std::chrono::steady_clock::now()};
    if (marks_.size() < 2)
        marks_.push_back(std::move(now));
    else
        marks_[1] = std::move(now);
}

void Profile::report(const char *device_name)
{
    collect();
    std::vector<Row> rows = rows_;
    double wall = ms_between(first_, last_);
    const char *window = "from the first op to the last";
    if (marks_.size() == 2) {
        uint64_t calls = 0;
        for (int op = 0; op < kOpCount; ++op) {
            rows[op].calls = marks_[1].rows[op].calls - marks_[0].rows[op].calls;
            rows[op].host_ms = marks_[1].rows[op].host_ms - marks_[0].rows[op].host_ms;
            rows[op].gpu_ms = marks_[1].rows[op].gpu_ms - marks_[0].rows[op].gpu_ms;
            calls += rows[op].calls;
        }
        if (calls > 1) { // more than the closing synchronize itself
            wall = ms_between(marks_[0].at, marks_[1].at);
            window = "between the first and the last synchronize";
        } else {
            rows = rows_;
        }
    }
    std::vector<int> order(kOpCount);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return rows[a].gpu_ms > rows[b].gpu_ms; });
    double gpu = 0, host = 0;
    for (const auto &r : rows) {
        gpu += r.gpu_ms;
        host += r.host_ms;
    }
    std::fprintf(stderr,
                 "cudnn profile (DISTTRAIN_CUDNN_PROFILE) on %s: %.1f ms %s, %.1f ms of it "
                 "on the GPU inside ops, %.1f ms on the host inside calls\n"
                 "%-28s %9s %11s %11s %8s %12s\n",
                 device_name, wall, window, gpu, host, "op", "calls", "gpu ms", "host ms",
                 "gpu %", "gpu us/call");
    for (int op : order) {
        const Row &r = rows[op];
        if (r.calls == 0)
            continue;
        std::fprintf(stderr, "%-28s %9llu %11.2f %11.2f %7.1f%% %12.1f\n", kOpNames[op],
                     static_cast<unsigned long long>(r.calls), r.gpu_ms, r.host_ms,
                     gpu > 0 ? 100.0 * r.gpu_ms / gpu : 0.0, 1000.0 * r.gpu_ms / double(r.calls));
    }
}

} // namespace dtp::cudnn

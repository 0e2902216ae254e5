/* SPDX-License-Identifier: Apache-2.0 */
// What the nccl transport tests share: the mock libraries' paths, a scope that points
// the plugin at them, and a child process that plays one rank.
#pragma once

#include "tcp_test_host.h"

#include <memory>
#include <string>

namespace nccltest {

using tcptest::Instance;
using tcptest::ScopedEnv;

// Points the plugin at the mocks (set before init; each init opens them anew).
struct UseMocks {
    UseMocks()
        : nccl("DISTTRAIN_NCCL_LIBRARY", NCCL_MOCK_PATH),
          cuda("DISTTRAIN_CUDA_RUNTIME_LIBRARY", CUDART_MOCK_PATH) {}
    ScopedEnv nccl;
    ScopedEnv cuda;
};

// A fresh file for the mock's call log; lines() counts the lines equal to `call`.
class CallLog {
public:
    CallLog();
    ~CallLog();
    int count(const std::string &call) const;
    const std::string &path() const { return path_; }

private:
    std::string path_;
    std::unique_ptr<ScopedEnv> env_;
};

// What one rank's init gave.
struct RankResult {
    int32_t status = 0;
    std::string error;
};

// Runs ranks 0..n-1 as child processes sharing a folder store; child r first sets the
// environment variables env_of(r) (NAME=VALUE pairs separated by ';'), then inits with
// timeout_ms, then (when given and init succeeded) runs then(instance, rank), and
// reports the status of the last of the two and the last error.
std::vector<RankResult> init_in_processes(int n, std::string (*env_of)(int rank),
                                          int timeout_ms,
                                          int32_t (*then)(Instance &, int rank) = nullptr);

} // namespace nccltest

// SPDX-License-Identifier: Apache-2.0
#include "nccl_test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace nccltest {

CallLog::CallLog() {
    char tmpl[] = "/tmp/dt-nccl-mock-log-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    path_ = tmpl;
    env_ = std::make_unique<ScopedEnv>("DISTTRAIN_MOCK_NCCL_LOG", path_.c_str());
}

CallLog::~CallLog() { unlink(path_.c_str()); }

int CallLog::count(const std::string &call) const {
    std::ifstream in(path_);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line == call;
    return n;
}

std::vector<RankResult> init_in_processes(int n, std::string (*env_of)(int), int timeout_ms,
                                         int32_t (*then)(Instance &, int)) {
    char dir_tmpl[] = "/tmp/dt-nccl-store-XXXXXX";
    if (mkdtemp(dir_tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    const std::string dir = dir_tmpl;
    std::vector<pid_t> pids;
    for (int r = 0; r < n; ++r) {
        pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("fork failed");
        if (pid == 0) {
            std::stringstream vars(env_of(r));
            std::string kv;
            while (std::getline(vars, kv, ';')) {
                auto eq = kv.find('=');
                if (eq != std::string::npos) setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
            }
            int code = 0;
            {
                auto store = std::make_shared<tcptest::DirStore>(dir);
                Instance inst(store, "job-token");
                int32_t rc = inst.init(r, n, timeout_ms);
                if (rc == DTP_OK && then != nullptr) rc = then(inst, r);
                std::ofstream out(dir + "/result-" + std::to_string(r));
                out << rc << "\n" << inst.host.last_error();
                code = rc == DTP_OK ? 0 : 1;
            }
            std::_Exit(code);
        }
        pids.push_back(pid);
    }
    std::vector<RankResult> results(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
        int st = 0;
        waitpid(pids[static_cast<size_t>(r)], &st, 0);
        std::ifstream in(dir + "/result-" + std::to_string(r));
        RankResult &res = results[static_cast<size_t>(r)];
        if (!(in >> res.status)) {
            res.status = -12345;
            res.error = "rank " + std::to_string(r) + " wrote no result (exit status " +
                        std::to_string(st) + ")";
            continue;
        }
        in.ignore(1);
        std::stringstream ss;
        ss << in.rdbuf();
        res.error = ss.str();
    }
    std::system(("rm -rf '" + dir + "'").c_str());
    return results;
}

} // namespace nccltest

// SPDX-License-Identifier: Apache-2.0
// One-way throughput of the tcp transport between two processes over loopback.
// Rank 0 streams `iters` messages of each size to rank 1, which answers with one empty
// message when all have arrived; throughput = bytes / time to that answer.
// Prints a table; never asserts a time. DISTTRAIN_TCP_SOCKBUF etc. apply as usual.
//
//   tcp_bench [max_mib [min_kib]]        (defaults 64, 4)
#include "tcp_test_host.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace tcptest;

namespace {

int run_rank(int rank, const std::string &dir, size_t min_bytes, size_t max_bytes) {
    auto store = std::make_shared<DirStore>(dir);
    Instance inst(store, "bench-token");
    if (inst.init(rank, 2, 30000) != DTP_OK) {
        std::fprintf(stderr, "rank %d: init failed: %s\n", rank, inst.host.last_error().c_str());
        return 1;
    }
    std::vector<uint8_t> buf(max_bytes, static_cast<uint8_t>(rank));
    if (rank == 0) std::printf("%12s %8s %12s\n", "bytes", "iters", "GB/s");
    uint64_t tag = 1;
    for (size_t size = min_bytes; size <= max_bytes; size *= 4) {
        // About 1 GiB per size (at least 8 messages), after 2 warm-up messages.
        int iters = static_cast<int>(std::max<size_t>(8, (size_t{1} << 30) / size));
        for (int round = 0; round < 2; ++round) {
            int n = round == 0 ? 2 : iters;
            auto start = std::chrono::steady_clock::now();
            std::vector<dt_transport_request_t> reqs(static_cast<size_t>(n));
            dt_transport_request_t ack{};
            if (rank == 0) {
                for (int i = 0; i < n; ++i) {
                    inst.isend(1, tag, buf.data(), size, &reqs[static_cast<size_t>(i)]);
                    // Keep a window of 4 in flight, as a pipelined algorithm would.
                    if (i >= 3) inst.wait(&reqs[static_cast<size_t>(i - 3)]);
                }
                for (auto &r : reqs) inst.wait(&r);
                inst.irecv(1, tag + 1, nullptr, 0, &ack);
                if (inst.wait(&ack) != DTP_OK) return 1;
            } else {
                for (int i = 0; i < n; ++i) {
                    inst.irecv(0, tag, buf.data(), size, &reqs[static_cast<size_t>(i)]);
                    if (i >= 3) inst.wait(&reqs[static_cast<size_t>(i - 3)]);
                }
                for (auto &r : reqs) {
                    if (inst.wait(&r) != DTP_OK) return 1;
                }
                inst.isend(0, tag + 1, nullptr, 0, &ack);
                inst.wait(&ack);
            }
            tag += 2;
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                           .count();
            if (rank == 0 && round == 1) {
                std::printf("%12zu %8d %12.2f\n", size, n, double(size) * n / s / 1e9);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    size_t max_mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
    size_t min_kib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 4;
    if (max_mib == 0 || min_kib == 0 || min_kib > max_mib * 1024) {
        std::fprintf(stderr, "usage: tcp_bench [max_mib [min_kib]]\n");
        return 2;
    }
    char tmpl[] = "/tmp/tcp_bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 1;
    std::string dir = tmpl;
    std::printf("tcp transport one-way throughput, 2 processes, loopback (SOCKBUF=%s)\n",
                std::getenv("DISTTRAIN_TCP_SOCKBUF") ? std::getenv("DISTTRAIN_TCP_SOCKBUF")
                                                     : "default");
    std::fflush(stdout);
    pid_t child = fork();
    if (child == 0) _exit(run_rank(1, dir, min_kib << 10, max_mib << 20));
    int rc = run_rank(0, dir, min_kib << 10, max_mib << 20);
    int status = 0;
    waitpid(child, &status, 0);
    std::filesystem::remove_all(dir);
    return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

// SPDX-License-Identifier: Apache-2.0
// oneDNN sgemm throughput on the mlp's shapes (784-1000-1000-10, batch 100), forward and
// backward, through dt_compute_matmul and, for comparison, oneDNN's dnnl_sgemm directly.
// Prints GFLOP/s per shape and for a whole training step (the "sgemm-bound" rate the
// trainer divides its images per second by). With one thread it also prints the rate per
// CPU-second of the process (the rate a quiet machine would give, which is what a
// trainer's images per CPU-second compare with on a busy one). Never asserts a time.
//
//   compute_sgemm_bench [--threads N] [--batch B] [--iters N]
#include <disttrain/compute.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Shape {
    const char *what;
    int ta, tb;
    int64_t m, n, k;
};

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Timing {
    double wall, cpu; // median seconds of one call, wall clock and process CPU time
};

// Medians of one call over `iters` timed calls after warm-up.
template <typename F>
Timing median_time(int iters, F &&f)
{
    for (int i = 0; i < 3; ++i)
        f();
    std::vector<double> t(iters), c(iters);
    for (int i = 0; i < iters; ++i) {
        const double c0 = cpu_seconds();
        auto t0 = std::chrono::steady_clock::now();
        f();
        t[i] = seconds_since(t0);
        c[i] = cpu_seconds() - c0;
    }
    std::sort(t.begin(), t.end());
    std::sort(c.begin(), c.end());
    return {t[t.size() / 2], c[c.size() / 2]};
}

} // namespace

int main(int argc, char **argv)
{
    int threads = 1, batch = 100, iters = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--threads"))
            threads = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--batch"))
            batch = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--iters"))
            iters = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: %s [--threads N] [--batch B] [--iters N]\n", argv[0]);
            return 2;
        }
    }
    dt_compute_params_t p{};
    p.field_mask = DT_COMPUTE_PARAM_FIELD_PLUGIN | DT_COMPUTE_PARAM_FIELD_THREADS;
    p.plugin = "onednn";
    p.threads = threads;
    dt_compute_h c = nullptr;
    if (dt_compute_create(&p, &c) != DT_OK) {
        std::fprintf(stderr, "compute_sgemm_bench: %s\n", dt_last_error());
        return 1;
    }

    // Layer y = x W with W (in, out): forward y = x W; backward dW = x^T dy, dx = dy W^T.
    const int64_t b = batch;
    std::vector<Shape> shapes;
    const int64_t layers[][2] = {{784, 1000}, {1000, 1000}, {1000, 10}};
    for (auto &l : layers) {
        const int64_t in = l[0], out = l[1];
        shapes.push_back({"fwd  y = x W", 0, 0, b, out, in});
        shapes.push_back({"bwd dW = x^T dy", 1, 0, in, out, b});
        if (in != 784) // the first layer needs no input gradient
            shapes.push_back({"bwd dx = dy W^T", 0, 1, b, in, out});
    }

    std::printf("oneDNN sgemm on the mlp's shapes, batch %d, %d thread(s), median of %d\n",
                batch, threads, iters);
    std::printf("%-18s %6s %6s %6s %14s %14s\n", "op", "m", "n", "k", "api GFLOP/s",
                "sgemm GFLOP/s");
    double total_flops = 0, total_api = 0, total_raw = 0, total_raw_cpu = 0;
    for (const auto &s : shapes) {
        std::vector<float> a(s.m * s.k, 0.5f), bm(s.k * s.n, 0.25f), out(s.m * s.n);
        const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
        const double api = median_time(iters, [&] {
            if (dt_compute_matmul(c, DT_FLOAT32, DT_FLOAT32, s.ta, s.tb, s.m, s.n, s.k, 1.0f,
                                  a.data(), bm.data(), 0.0f, out.data()) != DT_OK) {
                std::fprintf(stderr, "matmul: %s\n", dt_last_error());
                std::exit(1);
            }
        }).wall;
        const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
        const Timing raw_t = median_time(iters, [&] {
            dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda,
                       bm.data(), ldb, 0.0f, out.data(), s.n);
        });
        const double raw = raw_t.wall;
        total_raw_cpu += raw_t.cpu;
        std::printf("%-18s %6lld %6lld %6lld %14.1f %14.1f\n", s.what,
                    static_cast<long long>(s.m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), flops / api / 1e9, flops / raw / 1e9);
        total_flops += flops;
        total_api += api;
        total_raw += raw;
    }
    std::printf("training step: %.3f GFLOP per batch (%.0f MFLOP per image)\n",
                total_flops / 1e9, total_flops / double(batch) / 1e6);
    std::printf("sgemm-bound rate: api %.1f GFLOP/s (%.0f images/s), sgemm %.1f GFLOP/s "
                "(%.0f images/s)\n",
                total_flops / total_api / 1e9, double(batch) / total_api,
                total_flops / total_raw / 1e9, double(batch) / total_raw);
    if (threads == 1)
        std::printf("sgemm-bound rate per CPU-second: %.1f GFLOP/s (%.0f images/s)\n",
                    total_flops / total_raw_cpu / 1e9, double(batch) / total_raw_cpu);
    dt_compute_destroy(c);
    return 0;
}

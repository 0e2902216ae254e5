// SPDX-License-Identifier: Apache-2.0
// A rank program for the engine's multi-process tests (test_engine.py). Each subcommand
// exercises one behaviour through the public C API and prints what the test checks:
//   order N          N allreduces submitted in a rank-dependent order
//   fusion STEPS     1,000 mixed-size allreduces per step, checked
//   mismatch FIELD   ranks disagree on FIELD (count, dtype, op, root)
//   twice            the same name submitted twice while in flight
//   late_mismatch    3 ranks: rank 1 disagrees on the count of "step", which rank 0
//                    submits 300 ms after the others; then two agreeing rounds of "step"
//   partial          a name only rank 0 submits (partial_cached: after a first round)
//   fault VICTIM K   allreduce loop; rank VICTIM SIGKILLs itself at iteration K
//   stop VICTIM K    the same, but rank VICTIM SIGSTOPs itself (it hangs, alive)
//   leak STEPS       mixed collectives; prints resident memory growth
//   join             rank 1 runs out of data early and joins
//   join_device      the same on device memory of DISTTRAIN_MEMORY's provider, with two
//                    small sums in flight at once (fused where negotiated)
//   wrong_memory     rank 0 calls device memory host memory, the others call host memory
//                    device memory (refused at the call); then each rank's sums of both
//   device_error     a device allreduce whose buffer runs past the end of rank 1's fake
//                    device (DISTTRAIN_FAKE_DEVICE_BYTES=1 MiB), which only its copies
//                    find: each rank prints what the call failed with
//   groups           process sets {0,2} and {1,3} (4 ranks); lists ranks disagree on,
//                    and a list only rank 1 refuses (a repeated rank)
//   nested_groups    a set made inside a set, then a set of ranks that never saw it, and
//                    unnamed calls in each (4 ranks)
//   abort            rank 1 aborts while rank 0 waits
//   idle MS          after a barrier, MS ms with nothing to do, then one allreduce whose
//                    completion is polled (never waited for): prints its latency
//   late N MS        N blocking allreduces that rank 0 calls at once and the others MS ms
//                    later: rank 0 prints the median of how much longer than MS it waited
// Failures print "error: <status>: <message>" and exit 1.
#include "device_memory.h"

#include <disttrain/disttrain.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

dt_context_h ctx;
int rank, size;

[[noreturn]] void die(const char *what, dt_status_t s)
{
    std::fprintf(stderr, "error: %s: %s: %s\n", what, dt_status_string(s), dt_last_error());
    std::fflush(stderr);
    std::exit(1);
}

void check(dt_status_t s, const char *what)
{
    if (s != DT_OK)
        die(what, s);
}

[[noreturn]] void wrong(const std::string &what)
{
    std::fprintf(stderr, "error: wrong result: %s\n", what.c_str());
    std::exit(1);
}

int cmd_order(int n)
{
    std::vector<std::vector<float>> bufs(n, std::vector<float>(100));
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(1234 + rank));
    std::vector<dt_request_h> reqs(n);
    for (int i : order) {
        std::fill(bufs[i].begin(), bufs[i].end(), float(i * (rank + 1)));
        std::string name = "tensor." + std::to_string(i);
        check(dt_allreduce_async(ctx, name.c_str(), bufs[i].data(), bufs[i].data(), 100,
                                 DT_FLOAT32, DT_SUM, &reqs[i]),
              "dt_allreduce_async");
    }
    for (int i = 0; i < n; ++i) {
        check(dt_request_wait(reqs[i], -1), "dt_request_wait");
        dt_request_free(reqs[i]);
        float expect = float(i) * size * (size + 1) / 2;
        if (bufs[i][99] != expect)
            wrong("tensor." + std::to_string(i));
    }
    std::printf("order ok\n");
    return 0;
}

int cmd_fusion(int steps)
{
    const int n = 1000;
    std::vector<std::vector<float>> bufs(n);
    std::mt19937 sizes(42); // the same sizes on every rank
    for (auto &b : bufs)
        b.resize(1 + sizes() % 300);
    std::vector<dt_request_h> reqs(n);
    for (int step = 0; step < steps; ++step) {
        for (int i = 0; i < n; ++i) {
            for (size_t k = 0; k < bufs[i].size(); ++k)
                bufs[i][k] = float((rank + 1) * (i % 7 + k % 5 + step));
            std::string name = "grad." + std::to_string(i);
            check(dt_allreduce_async(ctx, name.c_str(), bufs[i].data(), bufs[i].data(),
                                     bufs[i].size(), DT_FLOAT32, DT_SUM, &reqs[i]),
                  "dt_allreduce_async");
        }
        for (int i = 0; i < n; ++i) {
            check(dt_request_wait(reqs[i], -1), "dt_request_wait");
            dt_request_free(reqs[i]);
            for (size_t k = 0; k < bufs[i].size(); ++k) {
                float expect = float(i % 7 + k % 5 + step) * size * (size + 1) / 2;
                if (bufs[i][k] != expect)
                    wrong("grad." + std::to_string(i) + "[" + std::to_string(k) + "]");
            }
        }
    }
    std::printf("fusion ok steps=%d\n", steps);
    return 0;
}

int cmd_mismatch(const std::string &field)
{
    std::vector<double> buf(64, 1.0);
    dt_status_t s;
    if (field == "count")
        s = dt_allreduce(ctx, "weights", buf.data(), buf.data(), 16 + 16 * rank, DT_FLOAT32,
                         DT_SUM);
    else if (field == "dtype")
        s = dt_allreduce(ctx, "weights", buf.data(), buf.data(), 8,
                         rank == 0 ? DT_FLOAT32 : DT_FLOAT64, DT_SUM);
    else if (field == "op")
        s = dt_allreduce(ctx, "weights", buf.data(), buf.data(), 8, DT_FLOAT32,
                         rank == 0 ? DT_SUM : DT_MAX);
    else if (field == "root")
        s = dt_broadcast(ctx, "weights", buf.data(), 8, DT_FLOAT32, rank % 2);
    else
        return 2;
    if (s == DT_OK)
        wrong("the mismatched operation succeeded");
    std::printf("%s: %s\n", dt_status_string(s), dt_last_error());
    // The context still works after a refused operation.
    check(dt_allreduce(ctx, "after", buf.data(), buf.data(), 8, DT_FLOAT64, DT_SUM), "after");
    std::printf("after ok\n");
    return 0;
}

int cmd_late_mismatch()
{
    // Each round's value is 100 * round + rank + 1, so a call paired with another
    // round's shows in the sum.
    for (int round = 0; round < 3; ++round) {
        if (round == 0 && rank == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::vector<float> buf(8, float(100 * round + rank + 1));
        size_t count = round == 0 && rank == 1 ? 4 : 8;
        auto start = std::chrono::steady_clock::now();
        dt_status_t s = dt_allreduce(ctx, "step", buf.data(), buf.data(), count, DT_FLOAT32,
                                     DT_SUM);
        double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                          .count();
        float want = 0;
        for (int r = 0; r < size; ++r)
            want += float(100 * round + r + 1);
        if (s == DT_OK)
            std::printf("round %d: DT_OK sum=%g want=%g after %.2f s\n", round, buf[0], want,
                        took);
        else
            std::printf("round %d: %s after %.2f s: %s\n", round, dt_status_string(s), took,
                        dt_last_error());
    }
    return 0;
}

int cmd_twice()
{
    std::vector<float> a(1000), b(1000);
    dt_request_h r1, r2;
    check(dt_allreduce_async(ctx, "dup", a.data(), a.data(), a.size(), DT_FLOAT32, DT_SUM, &r1),
          "first");
    check(dt_allreduce_async(ctx, "dup", b.data(), b.data(), b.size(), DT_FLOAT32, DT_SUM, &r2),
          "second");
    dt_status_t s2 = dt_request_wait(r2, -1);
    std::printf("second: %s: %s\n", dt_status_string(s2), dt_last_error());
    check(dt_request_wait(r1, -1), "first wait");
    dt_request_free(r1);
    dt_request_free(r2);
    return s2 == DT_ERR_MISMATCH ? 0 : 1;
}

double monotonic_s()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int cmd_partial(bool cached)
{
    std::vector<float> a(10, 1.0f);
    // With `cached`, every rank runs the operation once first, so rank 0's second
    // submission waits in the response cache rather than at the coordinator.
    if (cached)
        check(dt_allreduce(ctx, "only.rank0", a.data(), a.data(), 10, DT_FLOAT32, DT_SUM),
              "first round");
    if (rank == 0) {
        double start = monotonic_s();
        dt_status_t s = dt_allreduce(ctx, "only.rank0", a.data(), a.data(), 10, DT_FLOAT32,
                                     DT_SUM);
        std::printf("%s: %s (after %.2f s)\n", dt_status_string(s), dt_last_error(),
                    monotonic_s() - start);
        return s == DT_ERR_TIMEOUT ? 0 : 1;
    }
    // The other ranks stay alive, busy with nothing, past rank 0's deadline.
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(std::getenv("PARTIAL_SLEEP_S"))));
    return 0;
}

// A survivor that crashes must say so even where the launcher cannot tell which rank
// died how (under mpirun): one line, then the default action. (snprintf of integers
// takes no lock and allocates nothing in glibc.)
void report_crash(int sig)
{
    char line[64];
    int n = std::snprintf(line, sizeof line, "rank %d crashed by signal %d\n", rank, sig);
    (void)!write(2, line, size_t(n));
    std::signal(sig, SIG_DFL);
    raise(sig);
}

// The victim prints the CLOCK_MONOTONIC time of its signal and the survivors that of
// their error, so a test on this host can tell how long the survivors took.
int cmd_fault(int victim, int at, int sig)
{
    std::signal(SIGTERM, SIG_IGN); // report the failure ourselves, not die by the launcher
    for (int crash : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
        std::signal(crash, report_crash);
    std::vector<float> buf(1 << 16, 1.0f);
    auto start = std::chrono::steady_clock::now();
    for (int it = 0;; ++it) {
        if (rank == victim && it == at) {
            std::printf("victim rank %d raises signal %d at clock %.6f\n", rank, sig,
                        monotonic_s());
            std::fflush(stdout);
            raise(sig);
        }
        dt_status_t s = dt_allreduce(ctx, "loop", buf.data(), buf.data(), buf.size(),
                                     DT_FLOAT32, DT_SUM);
        if (s != DT_OK) {
            double since = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                         start).count();
            std::printf("failed after %d iterations (%.2f s, rank %d, clock %.6f): %s: %s\n",
                        it, since, rank, monotonic_s(), dt_status_string(s), dt_last_error());
            std::fflush(stdout);
            return s == DT_ERR_PEER_LOST ? 3 : 1;
        }
        std::fill(buf.begin(), buf.end(), 1.0f);
    }
}

long rss_kib()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::atol(line.c_str() + 6);
    return -1;
}

int cmd_leak(int steps)
{
    std::vector<float> a(4096), b(4096 * 8), c(4096 * 8);
    long warm = 0;
    for (int step = 0; step < steps; ++step) {
        dt_request_h r[4];
        std::string tag = std::to_string(step % 50); // names recur, as in training
        check(dt_allreduce_async(ctx, ("ar." + tag).c_str(), a.data(), a.data(), a.size(),
                                 DT_FLOAT32, DT_AVG, &r[0]), "allreduce");
        check(dt_broadcast_async(ctx, ("bc." + tag).c_str(), b.data(), 1024, DT_FLOAT32, 0,
                                 &r[1]), "broadcast");
        check(dt_allgather_async(ctx, ("ag." + tag).c_str(), a.data(), c.data(), 512,
                                 DT_FLOAT32, &r[2]), "allgather");
        check(dt_allreduce_async(ctx, ("ar2." + tag).c_str(), b.data(), b.data(), 100,
                                 DT_FLOAT32, DT_MAX, &r[3]), "allreduce");
        for (auto &req : r) {
            check(dt_request_wait(req, -1), "wait");
            dt_request_free(req);
        }
        if (step == steps / 10)
            warm = rss_kib();
    }
    std::printf("leak rss_warm_kib=%ld rss_end_kib=%ld steps=%d\n", warm, rss_kib(), steps);
    return 0;
}

int cmd_join()
{
    // Rank r has 3 + 2r batches; each rank sums its own value.
    int batches = 3 + 2 * rank;
    for (int i = 0; i < batches; ++i) {
        float v[4] = {1, 1, 1, 1}, avg[4] = {float(rank + 1), 0, 0, 0};
        check(dt_allreduce(ctx, "count", v, v, 4, DT_FLOAT32, DT_SUM), "sum");
        check(dt_allreduce(ctx, "mean", avg, avg, 4, DT_FLOAT32, DT_AVG), "avg");
        std::printf("batch %d sum=%g avg=%g\n", i, v[0], avg[0]);
    }
    int last = -1;
    check(dt_join(ctx, &last), "dt_join");
    std::printf("joined last=%d\n", last);
    return 0;
}

int cmd_join_device()
{
    dt::testing::DeviceMemory device;
    constexpr size_t kCount = 1000;
    const size_t bytes = kCount * sizeof(float);
    void *a = device.alloc(bytes), *b = device.alloc(bytes), *m = device.alloc(bytes);
    dt_op_params_t p = {};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = DT_MEMORY_DEVICE;
    const int batches = 3 + 2 * rank;
    std::vector<float> ones(kCount, 1.0f), twos(kCount, 2.0f), mine(kCount, float(rank + 1));
    std::vector<float> got_a(kCount), got_b(kCount), got_m(kCount);
    for (int i = 0; i < batches; ++i) {
        device.to_device(a, ones.data(), bytes);
        device.to_device(b, twos.data(), bytes);
        device.to_device(m, mine.data(), bytes);
        dt_request_h r[2];
        check(dt_allreduce_async_ex(ctx, "count", a, a, kCount, DT_FLOAT32, DT_SUM, &p, &r[0]),
              "sum a");
        check(dt_allreduce_async_ex(ctx, "count2", b, b, kCount, DT_FLOAT32, DT_SUM, &p, &r[1]),
              "sum b");
        for (auto &req : r) {
            check(dt_request_wait(req, -1), "wait");
            dt_request_free(req);
        }
        check(dt_allreduce_ex(ctx, "mean", m, m, kCount, DT_FLOAT32, DT_AVG, &p), "avg");
        device.to_host(got_a.data(), a, bytes);
        device.to_host(got_b.data(), b, bytes);
        device.to_host(got_m.data(), m, bytes);
        for (size_t k = 1; k < kCount; ++k)
            if (got_a[k] != got_a[0] || got_b[k] != got_b[0] || got_m[k] != got_m[0])
                wrong("element " + std::to_string(k) + " differs from element 0");
        std::printf("batch %d sum=%g sum2=%g avg=%g\n", i, got_a[0], got_b[0], got_m[0]);
    }
    int last = -1;
    check(dt_join(ctx, &last), "dt_join");
    std::printf("joined last=%d\n", last);
    device.free(a);
    device.free(b);
    device.free(m);
    return 0;
}

// A memory type that contradicts what DISTTRAIN_MEMORY's provider knows of the buffers is
// the caller's error, refused at the call like a bad root: its context and its peers'
// calls go on.
int cmd_wrong_memory()
{
    dt::testing::DeviceMemory device;
    constexpr size_t kCount = 64;
    const size_t bytes = kCount * sizeof(float);
    void *dev = device.alloc(bytes);
    std::vector<float> host(kCount, float(rank + 1)), got(kCount);
    device.to_device(dev, host.data(), bytes);
    dt_op_params_t p = {};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = rank == 0 ? DT_MEMORY_HOST : DT_MEMORY_DEVICE;
    void *wrong_buf = rank == 0 ? dev : static_cast<void *>(host.data());
    dt_status_t s = dt_allreduce_ex(ctx, "wrong", wrong_buf, wrong_buf, kCount, DT_FLOAT32,
                                    DT_SUM, &p);
    std::printf("wrong memory: %s: %s\n", dt_status_string(s), dt_last_error());
    check(dt_allreduce(ctx, "host", host.data(), host.data(), kCount, DT_FLOAT32, DT_SUM),
          "host sum");
    p.memory_type = DT_MEMORY_DEVICE;
    check(dt_allreduce_ex(ctx, "device", dev, dev, kCount, DT_FLOAT32, DT_SUM, &p),
          "device sum");
    device.to_host(got.data(), dev, bytes);
    std::printf("after: host sum=%g device sum=%g\n", host[kCount - 1], got[kCount - 1]);
    device.free(dev);
    return s == DT_ERR_INVALID_ARGUMENT ? 0 : 1;
}

// Rank 1's context breaks on an error of its own while it stays alive: its peers must
// hear that it stopped and why, not that it left the job.
int cmd_device_error()
{
    dt::testing::DeviceMemory device;
    constexpr size_t kDevice = size_t(1) << 20; // the test's DISTTRAIN_FAKE_DEVICE_BYTES
    constexpr size_t kCount = 16384;
    const size_t bytes = kCount * sizeof(float);
    // Rank 1's buffer starts 4 KiB before the end of its device: a pointer the provider
    // calls device memory, whose range only the copy finds too long.
    char *base = static_cast<char *>(device.alloc(rank == 1 ? kDevice : bytes));
    void *buf = rank == 1 ? base + kDevice - 4096 : base;
    dt_op_params_t p = {};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = DT_MEMORY_DEVICE;
    dt_status_t s = dt_allreduce_ex(ctx, "overrun", buf, buf, kCount, DT_FLOAT32, DT_SUM, &p);
    std::printf("device error: %s: %s\n", dt_status_string(s), dt_last_error());
    device.free(base);
    return s != DT_OK ? 0 : 1;
}

int cmd_groups()
{
    int even[] = {0, 2}, odd[] = {1, 3};
    dt_context_h g_even = nullptr, g_odd = nullptr;
    check(dt_group_create(ctx, even, 2, &g_even), "group even");
    check(dt_group_create(ctx, odd, 2, &g_odd), "group odd");
    dt_context_h mine = rank % 2 == 0 ? g_even : g_odd;
    if (mine == nullptr || (rank % 2 == 0 ? g_odd : g_even) != nullptr)
        wrong("group membership");
    int grank = -1, gsize = -1;
    dt_context_rank(mine, &grank);
    dt_context_size(mine, &gsize);
    int64_t v = rank, world = rank;
    check(dt_allreduce(mine, "gsum", &v, &v, 1, DT_INT64, DT_SUM), "group allreduce");
    // Groups that run different numbers of operations: the ranks' tags must still agree
    // on the world operation after them (ordered mode has no negotiation to keep step).
    if (rank % 2 == 0) {
        int64_t extra = 1;
        check(dt_allreduce(mine, "gextra", &extra, &extra, 1, DT_INT64, DT_SUM), "extra");
        if (extra != 2)
            wrong("extra group allreduce");
    }
    check(dt_allreduce(ctx, "wsum", &world, &world, 1, DT_INT64, DT_SUM), "world allreduce");
    std::printf("group rank=%d size=%d sum=%lld world=%lld\n", grank, gsize, (long long)v,
                (long long)world);
    int bad[] = {rank == 0 ? 0 : 1, 2};
    dt_context_h g_bad = nullptr;
    dt_status_t s = dt_group_create(ctx, bad, 2, &g_bad);
    std::printf("mismatched lists: %s: %s\n", dt_status_string(s), dt_last_error());
    dt_context_destroy(g_bad);
    // A list only rank 1 refuses: it still takes part, so the others fail at once too,
    // and the ranks still agree on the groups they create next.
    int first2[] = {0, 1}, repeated[] = {1, 1};
    g_bad = nullptr;
    auto start = std::chrono::steady_clock::now();
    s = dt_group_create(ctx, rank == 1 ? repeated : first2, 2, &g_bad);
    double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("refused list: %s after %.2f s: %s\n", dt_status_string(s), took,
                dt_last_error());
    dt_context_destroy(g_bad);
    dt_context_h g_next = nullptr;
    check(dt_group_create(ctx, first2, 2, &g_next), "group after a refused list");
    int64_t one = 1;
    if (g_next != nullptr) {
        check(dt_allreduce(g_next, "gnext", &one, &one, 1, DT_INT64, DT_SUM), "gnext");
        if (one != 2)
            wrong("allreduce of the group after a refused list");
    }
    // Every rank keeps its job context until the group's work is done everywhere.
    check(dt_barrier(ctx, "after gnext"), "barrier after the group");
    std::printf("group after refused list ok\n");
    dt_context_destroy(g_next);
    dt_context_destroy(g_even);
    dt_context_destroy(g_odd);
    return 0;
}

int cmd_nested_groups()
{
    // {0,1,2} of the world, then {0,1} of it (rank 3 takes no part), then {2,3} of the
    // world: rank 3 has created one group fewer than the others when it creates {2,3}.
    int first3[] = {0, 1, 2}, first2[] = {0, 1}, last2[] = {2, 3};
    dt_context_h a = nullptr, b = nullptr, c = nullptr;
    check(dt_group_create(ctx, first3, 3, &a), "group {0,1,2}");
    if (a != nullptr)
        check(dt_group_create(a, first2, 2, &b), "group {0,1} of {0,1,2}");
    check(dt_group_create(ctx, last2, 2, &c), "group {2,3}");
    if ((b != nullptr) != (rank < 2) || (c != nullptr) != (rank >= 2))
        wrong("group membership");

    // Unnamed calls: ranks 0 and 1 make one in b before the world's, ranks 2 and 3 one
    // in c; the world's unnamed call must still be the same operation on every rank.
    int64_t in_b = 1, in_c = 10, world = rank;
    if (b != nullptr)
        check(dt_allreduce(b, nullptr, &in_b, &in_b, 1, DT_INT64, DT_SUM), "b allreduce");
    if (c != nullptr)
        check(dt_allreduce(c, nullptr, &in_c, &in_c, 1, DT_INT64, DT_SUM), "c allreduce");
    check(dt_allreduce(ctx, nullptr, &world, &world, 1, DT_INT64, DT_SUM), "world allreduce");
    std::printf("nested b=%lld c=%lld world=%lld\n", (long long)(b ? in_b : 0),
                (long long)(c ? in_c : 0), (long long)world);
    dt_context_destroy(c);
    dt_context_destroy(b);
    dt_context_destroy(a);
    return 0;
}

int cmd_abort()
{
    std::vector<float> a(10, 1.0f);
    if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        check(dt_context_abort(ctx), "dt_context_abort");
        dt_status_t s = dt_allreduce(ctx, "late", a.data(), a.data(), 10, DT_FLOAT32, DT_SUM);
        std::printf("after abort: %s: %s\n", dt_status_string(s), dt_last_error());
        return s == DT_ERR_ABORTED ? 0 : 1;
    }
    dt_status_t s = dt_allreduce(ctx, "waits", a.data(), a.data(), 10, DT_FLOAT32, DT_SUM);
    std::printf("waiting rank: %s: %s\n", dt_status_string(s), dt_last_error());
    dt_status_t st = dt_context_status(ctx);
    std::printf("context status: %s\n", dt_status_string(st));
    return s == DT_ERR_PEER_LOST ? 0 : 1;
}

// Rank 1 destroys its context without calling the collective rank 0 waits in, then stays
// alive: rank 0 must fail at once from rank 1's notice, not when a connection closes.
int cmd_leave()
{
    using Clock = std::chrono::steady_clock;
    std::vector<float> a(10, 1.0f);
    if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        auto start = Clock::now();
        dt_status_t s = dt_context_destroy(ctx);
        ctx = nullptr;
        std::printf("left: %s after %.2f s\n", dt_status_string(s),
                    std::chrono::duration<double>(Clock::now() - start).count());
        std::this_thread::sleep_for(std::chrono::seconds(8));
        return s == DT_OK ? 0 : 1;
    }
    auto start = Clock::now();
    dt_status_t s = dt_allreduce(ctx, "waits", a.data(), a.data(), 10, DT_FLOAT32, DT_SUM);
    std::printf("waiting rank: %s after %.2f s: %s\n", dt_status_string(s),
                std::chrono::duration<double>(Clock::now() - start).count(), dt_last_error());
    return s == DT_ERR_PEER_LOST ? 0 : 1;
}

int cmd_idle(int idle_ms)
{
    using Clock = std::chrono::steady_clock;
    check(dt_barrier(ctx, "before idle"), "dt_barrier");
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    std::vector<float> a(16, float(rank + 1));
    auto start = Clock::now();
    dt_request_h req;
    check(dt_allreduce_async(ctx, "after idle", a.data(), a.data(), 16, DT_FLOAT32, DT_SUM,
                             &req),
          "dt_allreduce_async");
    // Polling, not dt_request_wait: a wait would start a cycle by itself.
    int done = 0;
    while (!done) {
        check(dt_request_test(req, &done), "dt_request_test");
        if (!done)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    dt_request_free(req);
    if (a[0] != float(size * (size + 1) / 2))
        wrong("after idle");
    std::printf("idle ok latency_ms=%.1f\n",
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    return 0;
}

// N blocking allreduces that rank 0 calls at once and the others late_ms later: rank 0
// prints the median of how much longer than late_ms it waited.
int cmd_late(int iterations, int late_ms)
{
    using Clock = std::chrono::steady_clock;
    std::vector<double> excess;
    std::vector<float> a(16);
    for (int i = 0; i < iterations; ++i) {
        std::fill(a.begin(), a.end(), float(rank + 1));
        if (rank != 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
        auto start = Clock::now();
        check(dt_allreduce(ctx, "late", a.data(), a.data(), a.size(), DT_FLOAT32, DT_SUM),
              "dt_allreduce");
        if (a[0] != float(size * (size + 1) / 2))
            wrong("late");
        excess.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() -
                         late_ms);
    }
    std::sort(excess.begin(), excess.end());
    if (rank == 0)
        std::printf("late ok excess_ms=%.1f\n", excess[excess.size() / 2]);
    return 0;
}

// The last rank arrives late_ms after the others, which wait in a blocking allreduce
// (the second of its name: the cache knows it). Prints how long the late rank's own call
// took; with DISTTRAIN_LOG_LEVEL=info the engines log their empty cycles at exit.
int cmd_straggler(int late_ms)
{
    using Clock = std::chrono::steady_clock;
    std::vector<float> a(16);
    for (int round = 0; round < 2; ++round) {
        std::fill(a.begin(), a.end(), float(rank + 1));
        check(dt_barrier(ctx, "before straggler"), "dt_barrier");
        if (round == 1 && rank == size - 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
        auto start = Clock::now();
        check(dt_allreduce(ctx, "late", a.data(), a.data(), a.size(), DT_FLOAT32, DT_SUM),
              "dt_allreduce");
        if (a[0] != float(size * (size + 1) / 2))
            wrong("late");
        if (round == 1 && rank == size - 1)
            std::printf("straggler ok call_ms=%.1f\n",
                        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    check(dt_context_create(nullptr, &ctx), "dt_context_create");
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    std::string cmd = argv[1];
    auto arg = [&](int i) { return argc > i ? std::atoi(argv[i]) : 0; };
    int rc = 2;
    if (cmd == "order") rc = cmd_order(arg(2));
    else if (cmd == "fusion") rc = cmd_fusion(arg(2));
    else if (cmd == "mismatch" && argc > 2) rc = cmd_mismatch(argv[2]);
    else if (cmd == "twice") rc = cmd_twice();
    else if (cmd == "late_mismatch") rc = cmd_late_mismatch();
    else if (cmd == "partial") rc = cmd_partial(false);
    else if (cmd == "partial_cached") rc = cmd_partial(true);
    else if (cmd == "fault") rc = cmd_fault(arg(2), arg(3), SIGKILL);
    else if (cmd == "stop") rc = cmd_fault(arg(2), arg(3), SIGSTOP);
    else if (cmd == "leak") rc = cmd_leak(arg(2));
    else if (cmd == "join") rc = cmd_join();
    else if (cmd == "join_device") rc = cmd_join_device();
    else if (cmd == "wrong_memory") rc = cmd_wrong_memory();
    else if (cmd == "device_error") rc = cmd_device_error();
    else if (cmd == "groups") rc = cmd_groups();
    else if (cmd == "nested_groups") rc = cmd_nested_groups();
    else if (cmd == "abort") rc = cmd_abort();
    else if (cmd == "leave") rc = cmd_leave();
    else if (cmd == "idle") rc = cmd_idle(arg(2));
    else if (cmd == "straggler") rc = cmd_straggler(arg(2));
    else if (cmd == "late") rc = cmd_late(arg(2), arg(3));
    if (ctx != nullptr)
        dt_context_destroy(ctx);
    return rc;
}

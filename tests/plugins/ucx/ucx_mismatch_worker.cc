// SPDX-License-Identifier: Apache-2.0
// A rank of test_ucx_jobs.py: up to 3 allreduces of 1 M floats times (rank + 1), so ranks
// disagree on the count by megabytes (UCX's rendezvous path). Ordered mode runs it
// without negotiation; every rank must return from the call (a rank whose receives all
// fit may even return DT_OK), never die inside UCX. The buffer is freed at once, as a
// program unwinding from the error would: a peer that still reads it must get an error,
// not abort. Prints "mismatch: <status>: <message>" and exits 3, or "mismatch
// succeeded" and exits 1.
#include <disttrain/disttrain.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

int main()
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    // The launcher terminates the other ranks once one exits with an error; each must
    // still report how its own call ended (a hung one is killed after the grace period).
    std::signal(SIGTERM, SIG_IGN);
    dt_context_h ctx = nullptr;
    dt_status_t s = dt_context_create(nullptr, &ctx);
    if (s != DT_OK) {
        std::printf("init: %s: %s\n", dt_status_string(s), dt_last_error());
        return 2;
    }
    int rank = 0;
    dt_context_rank(ctx, &rank);
    // Not a power of two, so the ranks' chunk boundaries differ from the first call on;
    // a rank whose receives all fit returns DT_OK and goes on to the next call.
    const size_t count = 1000000 * size_t(rank + 1);
    for (int i = 0; i < 3 && s == DT_OK; ++i) {
        auto buf = std::make_unique<float[]>(count);
        s = dt_allreduce(ctx, "grad", buf.get(), buf.get(), count, DT_FLOAT32, DT_SUM);
    }
    if (s == DT_OK) {
        std::printf("mismatch succeeded\n");
        dt_context_destroy(ctx);
        return 1;
    }
    std::printf("mismatch: %s: %s\n", dt_status_string(s), dt_last_error());
    // Some time with the context alive and the buffer gone: peers' reads of it happen now.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    dt_context_destroy(ctx);
    return 3;
}

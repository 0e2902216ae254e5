/* SPDX-License-Identifier: Apache-2.0 */
/* What the nccl device transport adds to a call: a blocking dt_allreduce_ex on device
 * memory, and dt_allreduce_async_ex followed by dt_request_wait, against raw NCCL
 * (ncclAllReduce, then cudaStreamSynchronize) on the same GPU, through the same libnccl,
 * one rank, in alternating rounds, in place (on one rank NCCL then has nothing to do: the
 * row is the pure cost of the call) and out of place (a copy on the GPU). Prints the
 * median time per call of each, the difference in microseconds and as a share; never
 * asserts a time.
 *
 * Each call names its producer's stream (dt_op_params_t.stream), as a user passes the
 * stream that wrote the gradients. The blocking call then runs on that stream itself
 * (launch_on_stream), on the caller's thread; the asynchronous one waits for the event
 * the core recorded on it, on the GPU (wait_event), and is run by the engine's thread, so
 * its column also holds the hand-over between the two threads (about 20 us a call on the
 * 2-core CI machine, where this bench runs on mocks).
 * DISTTRAIN_NCCL_HOST_WAIT=1 has the core wait for the producer on the host for both
 * instead, as it did before; tests/gpu/run.sh runs both settings.
 *
 *     DISTTRAIN_MEMORY=cuda DISTTRAIN_DEVICE_TRANSPORT=nccl \
 *     DISTTRAIN_NCCL_LIBRARY=/path/libnccl.so.2 disttrainrun -np 1 -- nccl_overhead \
 *         [rounds [calls of 64 MiB a round]]
 *
 * NCCL and the CUDA runtime are opened with dlopen, as the plugin opens them
 * (DISTTRAIN_CUDA_RUNTIME_LIBRARY, default libcudart.so.13), so this builds without them. */
#define _POSIX_C_SOURCE 199309L
#include "bench_clock.h"

#include <disttrain/disttrain.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The few entry points used, with NCCL's and CUDA's types reduced to what crosses the
 * call: opaque handles as pointers, enums as int. */
typedef struct { char internal[128]; } unique_id_t;
static int (*get_unique_id)(unique_id_t *);
static int (*comm_init_rank)(void **, int, unique_id_t, int);
static int (*nccl_allreduce)(const void *, void *, size_t, int, int, void *, void *);
static int (*comm_destroy)(void *);
static int (*cuda_malloc)(void **, size_t);
static int (*cuda_free)(void *);
static int (*stream_create)(void **, unsigned);
static int (*stream_sync)(void *);
static int (*cuda_set_device)(int);

enum { kNcclFloat32 = 7, kNcclSum = 0, kStreamNonBlocking = 1 };

static void *must_open(const char *name)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "nccl_overhead: cannot open %s: %s\n", name, dlerror());
        exit(2);
    }
    return h;
}

static void *must_find(void *lib, const char *symbol)
{
    void *f = dlsym(lib, symbol);
    if (f == NULL) {
        fprintf(stderr, "nccl_overhead: %s not found: %s\n", symbol, dlerror());
        exit(2);
    }
    return f;
}

static void raw_ok(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "nccl_overhead: %s failed with %d\n", what, rc);
        exit(1);
    }
}

static void dt_ok(dt_status_t s, const char *what)
{
    if (s != DT_OK) {
        fprintf(stderr, "nccl_overhead: %s: %s: %s\n", what, dt_status_string(s),
                dt_last_error());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 7;
    /* Calls per round: 2000 of 4 bytes, `large` of 64 MiB (20 by default; fewer where
     * the copies are slow, as on the mock NCCL the CI runs this on). */
    const int large = argc > 2 ? atoi(argv[2]) : 20;
    const char *nccl_path = getenv("DISTTRAIN_NCCL_LIBRARY");
    const char *cudart_path = getenv("DISTTRAIN_CUDA_RUNTIME_LIBRARY");
    if (rounds < 1 || large < 1 || nccl_path == NULL) {
        fprintf(stderr, "usage: DISTTRAIN_NCCL_LIBRARY=/path/libnccl.so.2 nccl_overhead "
                        "[rounds >= 1 [calls of 64 MiB a round >= 1]]\n");
        return 2;
    }
    void *cudart = must_open(cudart_path != NULL ? cudart_path : "libcudart.so.13");
    void *nccl = must_open(nccl_path);
    *(void **)&get_unique_id = must_find(nccl, "ncclGetUniqueId");
    *(void **)&comm_init_rank = must_find(nccl, "ncclCommInitRank");
    *(void **)&nccl_allreduce = must_find(nccl, "ncclAllReduce");
    *(void **)&comm_destroy = must_find(nccl, "ncclCommDestroy");
    *(void **)&cuda_malloc = must_find(cudart, "cudaMalloc");
    *(void **)&cuda_free = must_find(cudart, "cudaFree");
    *(void **)&stream_create = must_find(cudart, "cudaStreamCreateWithFlags");
    *(void **)&stream_sync = must_find(cudart, "cudaStreamSynchronize");
    *(void **)&cuda_set_device = must_find(cudart, "cudaSetDevice");

    dt_context_h ctx;
    dt_ok(dt_context_create(NULL, &ctx), "dt_context_create");
    raw_ok(cuda_set_device(0), "cudaSetDevice");
    void *stream, *comm;
    unique_id_t id;
    raw_ok(stream_create(&stream, kStreamNonBlocking), "cudaStreamCreateWithFlags");
    raw_ok(get_unique_id(&id), "ncclGetUniqueId");
    raw_ok(comm_init_rank(&comm, 1, id, 0), "ncclCommInitRank");
    const size_t sizes[] = {4, (size_t)64 << 20};
    const size_t largest = sizes[1];
    void *buf;
    raw_ok(cuda_malloc(&buf, 2 * largest), "cudaMalloc"); /* source, then result */
    dt_op_params_t params;
    memset(&params, 0, sizeof params);
    params.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_STREAM;
    params.memory_type = DT_MEMORY_DEVICE;
    params.stream = stream;

    const char *host_wait = getenv("DISTTRAIN_NCCL_HOST_WAIT");
    const int on_host = host_wait != NULL && strcmp(host_wait, "1") == 0;
    printf("nccl_overhead: 1 rank, float32 sum, median of %d alternating rounds; the "
           "producer's stream is waited for %s\n", rounds,
           on_host ? "on the host (DISTTRAIN_NCCL_HOST_WAIT=1)"
                   : "on the GPU (blocking: the call runs on it; async: wait_event)");
    printf("%10s %13s %9s %12s %9s %8s %12s %9s %8s\n", "bytes", "placement", "raw us",
           "blocking us", "added us", "added %", "async us", "added us", "added %");
    for (int s = 0; s < 4; ++s) {
        const size_t bytes = sizes[s / 2];
        const int in_place = s % 2 == 0;
        const size_t count = bytes / 4;
        void *out = in_place ? buf : (char *)buf + largest;
        const int iters = bytes >= (1u << 20) ? large : 2000;
        double *raw = malloc(sizeof(double) * (size_t)rounds);
        double *ours = malloc(sizeof(double) * (size_t)rounds);
        double *async = malloc(sizeof(double) * (size_t)rounds);
        for (int r = -1; r < rounds; ++r) { /* round -1 warms both up */
            double start = bench_now_us();
            for (int i = 0; i < iters; ++i) {
                raw_ok(nccl_allreduce(buf, out, count, kNcclFloat32, kNcclSum, comm, stream),
                       "ncclAllReduce");
                raw_ok(stream_sync(stream), "cudaStreamSynchronize");
            }
            const double raw_us = (bench_now_us() - start) / iters;
            start = bench_now_us();
            for (int i = 0; i < iters; ++i)
                dt_ok(dt_allreduce_ex(ctx, "overhead", buf, out, count, DT_FLOAT32, DT_SUM,
                                      &params),
                      "dt_allreduce_ex");
            const double ours_us = (bench_now_us() - start) / iters;
            start = bench_now_us();
            for (int i = 0; i < iters; ++i) {
                dt_request_h req = NULL;
                dt_ok(dt_allreduce_async_ex(ctx, "overhead", buf, out, count, DT_FLOAT32,
                                            DT_SUM, &params, &req),
                      "dt_allreduce_async_ex");
                dt_ok(dt_request_wait(req, -1), "dt_request_wait");
                dt_ok(dt_request_free(req), "dt_request_free");
            }
            const double async_us = (bench_now_us() - start) / iters;
            if (r >= 0) {
                raw[r] = raw_us;
                ours[r] = ours_us;
                async[r] = async_us;
            }
        }
        const double a = bench_median(raw, rounds), b = bench_median(ours, rounds);
        const double c = bench_median(async, rounds);
        printf("%10zu %13s %9.2f %12.2f %9.2f %7.2f%% %12.2f %9.2f %7.2f%%\n", bytes,
               in_place ? "in place" : "out of place", a, b, b - a, 100.0 * (b - a) / a, c,
               c - a, 100.0 * (c - a) / a);
        free(raw);
        free(ours);
        free(async);
    }
    fflush(stdout);
    raw_ok(comm_destroy(comm), "ncclCommDestroy");
    raw_ok(cuda_free(buf), "cudaFree");
    dt_ok(dt_context_destroy(ctx), "dt_context_destroy");
    return 0;
}

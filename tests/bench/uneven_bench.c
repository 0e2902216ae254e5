/* SPDX-License-Identifier: Apache-2.0 */
/* What the uneven collectives' count check costs: dt_allgather against dt_allgatherv and
 * dt_alltoall against dt_alltoallv with the same (equal) blocks, per block size. Prints
 * the median time per call of each in microseconds (rank 0); never asserts a time.
 * Run: disttrainrun -np 2 -- uneven_bench [rounds]; DISTTRAIN_ORDERED=1 for ordered. */
#define _POSIX_C_SOURCE 199309L
#include "bench_clock.h"

#include <disttrain/disttrain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static dt_context_h ctx;
static int rank, size;

static void ok(dt_status_t s, const char *what)
{
    if (s != DT_OK) {
        fprintf(stderr, "uneven_bench: %s: %s: %s\n", what, dt_status_string(s), dt_last_error());
        exit(1);
    }
}

/* kind 0 allgather, 1 allgatherv, 2 alltoall, 3 alltoallv; count elements per block. */
static double median_call_us(int kind, size_t count, int rounds, unsigned char *send,
                             unsigned char *recv, const size_t *counts)
{
    double *times = malloc(sizeof(double) * (size_t)rounds);
    const int iters = count >= (1u << 18) ? 5 : 50;
    for (int r = -1; r < rounds; ++r) { /* round -1 warms up */
        ok(dt_barrier(ctx, NULL), "barrier");
        double start = bench_now_us();
        for (int i = 0; i < iters; ++i) {
            if (kind == 0)
                ok(dt_allgather(ctx, "b", send, recv, count, DT_UINT8), "allgather");
            else if (kind == 1)
                ok(dt_allgatherv(ctx, "b", send, recv, count, counts, DT_UINT8), "allgatherv");
            else if (kind == 2)
                ok(dt_alltoall(ctx, "b", send, recv, count, DT_UINT8), "alltoall");
            else
                ok(dt_alltoallv(ctx, "b", send, recv, counts, counts, DT_UINT8), "alltoallv");
        }
        if (r >= 0)
            times[r] = (bench_now_us() - start) / iters;
    }
    qsort(times, (size_t)rounds, sizeof(double), bench_by_value);
    double median = times[rounds / 2];
    free(times);
    return median;
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 7;
    ok(dt_context_create(NULL, &ctx), "dt_context_create");
    ok(dt_context_rank(ctx, &rank), "rank");
    ok(dt_context_size(ctx, &size), "size");
    const size_t max = (size_t)1 << 20;
    unsigned char *send = calloc(max * (size_t)size, 1), *recv = calloc(max * (size_t)size, 1);
    size_t *counts = malloc(sizeof(size_t) * (size_t)size);
    if (rank == 0)
        printf("%d ranks, median us per call over %d rounds\n%10s %10s %10s %10s %10s\n",
               size, rounds, "block B", "allgather", "allgatherv", "alltoall", "alltoallv");
    for (size_t count = 4; count <= max; count *= 16) {
        for (int r = 0; r < size; ++r)
            counts[r] = count;
        double t[4];
        for (int kind = 0; kind < 4; ++kind)
            t[kind] = median_call_us(kind, count, rounds, send, recv, counts);
        if (rank == 0)
            printf("%10zu %10.2f %10.2f %10.2f %10.2f\n", count, t[0], t[1], t[2], t[3]);
    }
    free(send);
    free(recv);
    free(counts);
    ok(dt_context_destroy(ctx), "destroy");
    return 0;
}

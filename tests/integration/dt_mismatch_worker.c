/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rank that breaks the promise of ordered mode on purpose:
 *   dt_mismatch_worker CASE [LINGER_RANK:MS]
 * Every rank runs three agreeing allreduces, then the case's call, in which rank 1
 * disagrees with the others, then one more agreeing allreduce ("next"). CASE is one of
 *   count        rank 1 reduces 4 elements where the others reduce 8
 *   count_large  rank 1 reduces 64 Ki elements where the others reduce 1 Mi
 *   count_zero   rank 1 reduces no elements where the others reduce 8
 *   dtype        rank 1 reduces int32 where the others reduce float32 (the same size)
 *   op           rank 1 takes the maximum where the others sum
 *   kind         rank 1 broadcasts where the others allreduce
 *   root         rank 1 broadcasts from rank 1 where the others broadcast from rank 0
 *   root_count   rank 1 broadcasts 4 elements from rank 0 where the others broadcast 8
 *   skip         rank 1 skips the allreduce "case.a" the others make before "case.b"
 *   allgatherv   rank 1 calls allgatherv where the others allgather (the same counts)
 *   alltoallv    rank 1 calls alltoallv where the others alltoall (the same counts)
 *   none         every rank agrees (the control case)
 * For each call it prints "call NAME: STATUS SECONDS MESSAGE" and, for a call that
 * returned DT_OK, "data NAME: ok" or "data NAME: wrong (...)", the data judged by this
 * rank's own view of the call as if every rank had made it (the gathers are only ever
 * disagreeing calls, which every rank must fail: their data is not judged). Exits 0 when every call
 * returned DT_OK, 1 otherwise. With LINGER_RANK:MS, that rank waits MS milliseconds
 * between its last call and dt_context_destroy, as a program saving a checkpoint does.
 */
#define _POSIX_C_SOURCE 200809L
#include <disttrain/disttrain.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum kind { ALLREDUCE, BROADCAST, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV };

struct call {
    enum kind kind;
    const char *name;
    size_t count;
    dt_dtype_t dtype;
    dt_reduce_op_t op;
    int root;
    int base; /* rank r contributes base * (r + 1); a broadcast root sends base * (root + 1) */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double expected(const struct call *c, int rank, int size)
{
    if (c->kind == BROADCAST)
        return (double)c->base * (c->root + 1);
    if (c->op == DT_MAX)
        return (double)c->base * size;
    (void)rank;
    return (double)c->base * size * (size + 1) / 2.0;
}

static void fill(void *buf, const struct call *c, double value)
{
    for (size_t i = 0; i < c->count; ++i) {
        if (c->dtype == DT_INT32)
            ((int32_t *)buf)[i] = (int32_t)value;
        else
            ((float *)buf)[i] = (float)value;
    }
}

static double element(const void *buf, const struct call *c, size_t i)
{
    return c->dtype == DT_INT32 ? (double)((const int32_t *)buf)[i]
                                : (double)((const float *)buf)[i];
}

/* The gathers, each with its block of c->count elements per rank. */
static dt_status_t gather(dt_context_h ctx, const struct call *c, int size)
{
    size_t counts[2 * 64];
    size_t n = c->count * (size_t)size, es = dt_dtype_size(c->dtype);
    if (size > 64)
        return DT_ERR_INVALID_ARGUMENT;
    for (int r = 0; r < 2 * size; ++r)
        counts[r] = c->count;
    char *send = calloc(n, es), *recv = calloc(n, es);
    dt_status_t s = DT_ERR_INVALID_ARGUMENT;
    if (c->kind == ALLGATHER)
        s = dt_allgather(ctx, c->name, send, recv, c->count, c->dtype);
    else if (c->kind == ALLGATHERV)
        s = dt_allgatherv(ctx, c->name, send, recv, c->count, counts, c->dtype);
    else if (c->kind == ALLTOALL)
        s = dt_alltoall(ctx, c->name, send, recv, c->count, c->dtype);
    else if (c->kind == ALLTOALLV)
        s = dt_alltoallv(ctx, c->name, send, recv, counts, counts + size, c->dtype);
    free(send);
    free(recv);
    return s;
}

/* Runs c; returns its status after printing the verdict lines. */
static dt_status_t run(dt_context_h ctx, const struct call *c, int rank, int size)
{
    if (c->kind >= ALLGATHER) {
        double start = now();
        dt_status_t s = gather(ctx, c, size);
        printf("call %s: %s %.3f %s\n", c->name, dt_status_string(s), now() - start,
               s == DT_OK ? "" : dt_last_error());
        fflush(stdout);
        return s;
    }
    void *buf = malloc(c->count * 4 + 4);
    double mine = c->kind == BROADCAST ? (rank == c->root ? c->base * (rank + 1.0) : -1.0)
                                       : c->base * (rank + 1.0);
    fill(buf, c, mine);
    double start = now();
    dt_status_t s = c->kind == BROADCAST
                        ? dt_broadcast(ctx, c->name, buf, c->count, c->dtype, c->root)
                        : dt_allreduce(ctx, c->name, buf, buf, c->count, c->dtype, c->op);
    printf("call %s: %s %.3f %s\n", c->name, dt_status_string(s), now() - start,
           s == DT_OK ? "" : dt_last_error());
    if (s == DT_OK) {
        double want = expected(c, rank, size);
        size_t bad = c->count;
        for (size_t i = 0; i < c->count && bad == c->count; ++i)
            if (element(buf, c, i) != want)
                bad = i;
        if (bad == c->count)
            printf("data %s: ok\n", c->name);
        else
            printf("data %s: wrong (element %zu is %g, expected %g)\n", c->name, bad,
                   element(buf, c, bad), want);
    }
    fflush(stdout);
    free(buf);
    return s;
}

int main(int argc, char **argv)
{
    int linger_rank = -1, linger_ms = 0;
    if (argc != 2 && (argc != 3 || sscanf(argv[2], "%d:%d", &linger_rank, &linger_ms) != 2)) {
        fprintf(stderr, "usage: dt_mismatch_worker CASE [LINGER_RANK:MS]\n");
        return 2;
    }
    const char *which = argv[1];
    /* The launcher stops the job when the first rank exits; each rank must still report
     * how its calls ended (a rank that hangs is killed after the grace period). */
    signal(SIGTERM, SIG_IGN);
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(NULL, &ctx);
    if (s != DT_OK) {
        fprintf(stderr, "error: dt_context_create: %s: %s\n", dt_status_string(s),
                dt_last_error());
        return 1;
    }
    int rank, size;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    const int odd = rank == 1;

    struct call warm = {ALLREDUCE, "warm", 16, DT_FLOAT32, DT_SUM, 0, 1};
    struct call calls[2];
    int n = 1;
    struct call c = {ALLREDUCE, "case", 8, DT_FLOAT32, DT_SUM, 0, 2};
    if (strcmp(which, "count") == 0) {
        c.count = odd ? 4 : 8;
    } else if (strcmp(which, "count_large") == 0) {
        c.count = odd ? (size_t)1 << 16 : (size_t)1 << 20;
    } else if (strcmp(which, "count_zero") == 0) {
        c.count = odd ? 0 : 8;
    } else if (strcmp(which, "dtype") == 0) {
        c.dtype = odd ? DT_INT32 : DT_FLOAT32;
    } else if (strcmp(which, "op") == 0) {
        c.op = odd ? DT_MAX : DT_SUM;
    } else if (strcmp(which, "kind") == 0) {
        c.kind = odd ? BROADCAST : ALLREDUCE;
    } else if (strcmp(which, "root") == 0) {
        c.kind = BROADCAST;
        c.root = odd ? 1 : 0;
    } else if (strcmp(which, "root_count") == 0) {
        c.kind = BROADCAST;
        c.count = odd ? 4 : 8;
    } else if (strcmp(which, "allgatherv") == 0) {
        c.kind = odd ? ALLGATHERV : ALLGATHER;
    } else if (strcmp(which, "alltoallv") == 0) {
        c.kind = odd ? ALLTOALLV : ALLTOALL;
    } else if (strcmp(which, "skip") == 0) {
        struct call a = {ALLREDUCE, "case.a", 8, DT_FLOAT32, DT_SUM, 0, 2};
        struct call b = {ALLREDUCE, "case.b", 8, DT_FLOAT32, DT_SUM, 0, 3};
        if (odd) {
            calls[0] = b;
        } else {
            calls[0] = a;
            calls[1] = b;
            n = 2;
        }
    } else if (strcmp(which, "none") != 0) {
        fprintf(stderr, "dt_mismatch_worker: unknown case '%s'\n", which);
        dt_context_destroy(ctx);
        return 2;
    }
    if (strcmp(which, "skip") != 0)
        calls[0] = c;

    int failed = 0;
    for (int i = 0; i < 3 && !failed; ++i)
        failed = run(ctx, &warm, rank, size) != DT_OK;
    for (int i = 0; i < n; ++i)
        failed |= run(ctx, &calls[i], rank, size) != DT_OK;
    struct call next = {ALLREDUCE, "next", 16, DT_FLOAT32, DT_SUM, 0, 5};
    failed |= run(ctx, &next, rank, size) != DT_OK;
    if (rank == linger_rank) {
        struct timespec pause = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    dt_context_destroy(ctx);
    return failed ? 1 : 0;
}

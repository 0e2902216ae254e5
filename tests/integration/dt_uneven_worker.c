/* SPDX-License-Identifier: Apache-2.0 */
/* A rank program for test_uneven.py: dt_allgatherv and dt_alltoallv through the public C
 * API, from C99. Every rank checks its results and prints "[uneven] ok" at the end:
 *   - allgatherv with uneven and empty blocks: blocking, in place, async, _ex;
 *   - alltoallv with uneven and empty blocks: blocking and async;
 *   - bad arguments, refused on this rank at once (DT_ERR_INVALID_ARGUMENT);
 *   - ranks that disagree on the counts: DT_ERR_MISMATCH on every rank, naming the ranks
 *     and counts, after which the context still works.
 * Failures print "error: ..." and exit 1. */
#include <disttrain/disttrain.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dt_context_h ctx;
static int rank, size;

static void fail(const char *what, dt_status_t s)
{
    fprintf(stderr, "error: %s: %s: %s\n", what, dt_status_string(s), dt_last_error());
    exit(1);
}

static void check(dt_status_t s, const char *what)
{
    if (s != DT_OK)
        fail(what, s);
}

static void expect(dt_status_t got, dt_status_t want, const char *needle, const char *what)
{
    if (got != want) {
        fprintf(stderr, "error: %s: got %s, want %s (%s)\n", what, dt_status_string(got),
                dt_status_string(want), dt_last_error());
        exit(1);
    }
    if (needle != NULL && strstr(dt_last_error(), needle) == NULL) {
        fprintf(stderr, "error: %s: message lacks \"%s\": %s\n", what, needle,
                dt_last_error());
        exit(1);
    }
}

/* Rank r's allgatherv block: (r * 3) % 4 elements (rank 0's is empty), one a few
 * thousand long on some rank so larger messages are covered too. */
static size_t gather_count(int r) { return r == 2 ? 5000 : (size_t)((r * 3) % 4); }
/* Elements rank i sends rank j in the alltoallv. */
static size_t pair_count(int i, int j) { return (size_t)((i + 2 * j) % 4) * (i == 1 ? 700 : 1); }

static void test_allgatherv(void)
{
    size_t *counts = malloc(sizeof(size_t) * (size_t)size);
    size_t total = 0, before = 0;
    for (int r = 0; r < size; ++r) {
        counts[r] = gather_count(r);
        if (r < rank)
            before += counts[r];
        total += counts[r];
    }
    const size_t mine = counts[rank];
    float *send = malloc(sizeof(float) * (mine + 1));
    float *recv = malloc(sizeof(float) * (total + 1));
    for (size_t k = 0; k < mine; ++k)
        send[k] = (float)(1000 * rank + (int)k);
    for (int form = 0; form < 4; ++form) {
        memset(recv, 0, sizeof(float) * total);
        if (form == 0) {
            check(dt_allgatherv(ctx, "gv", send, recv, mine, counts, DT_FLOAT32), "allgatherv");
        } else if (form == 1) { /* in place */
            memcpy(recv + before, send, sizeof(float) * mine);
            check(dt_allgatherv(ctx, "gv.inplace", recv + before, recv, mine, counts,
                                DT_FLOAT32),
                  "allgatherv in place");
        } else if (form == 2) {
            dt_request_h req;
            /* The counts are copied at the call: scribble over them before the wait. */
            size_t *copy = malloc(sizeof(size_t) * (size_t)size);
            memcpy(copy, counts, sizeof(size_t) * (size_t)size);
            check(dt_allgatherv_async(ctx, "gv.async", send, recv, mine, copy, DT_FLOAT32, &req),
                  "allgatherv_async");
            memset(copy, 0xff, sizeof(size_t) * (size_t)size);
            free(copy);
            check(dt_request_wait(req, -1), "allgatherv wait");
            dt_request_free(req);
        } else {
            dt_op_params_t p = {0};
            p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
            p.memory_type = DT_MEMORY_HOST;
            check(dt_allgatherv_ex(ctx, "gv.ex", send, recv, mine, counts, DT_FLOAT32, &p),
                  "allgatherv_ex");
        }
        size_t at = 0;
        for (int r = 0; r < size; ++r)
            for (size_t k = 0; k < counts[r]; ++k, ++at)
                if (recv[at] != (float)(1000 * r + (int)k)) {
                    fprintf(stderr, "error: allgatherv form %d: element %zu of rank %d's "
                            "block is %g\n", form, k, r, (double)recv[at]);
                    exit(1);
                }
    }
    free(send);
    free(recv);
    free(counts);
    printf("[uneven] allgatherv ok\n");
}

static void test_alltoallv(void)
{
    size_t *sc = malloc(sizeof(size_t) * (size_t)size), *rc = malloc(sizeof(size_t) * (size_t)size);
    size_t stotal = 0, rtotal = 0;
    for (int j = 0; j < size; ++j) {
        sc[j] = pair_count(rank, j);
        rc[j] = pair_count(j, rank);
        stotal += sc[j];
        rtotal += rc[j];
    }
    int64_t *send = malloc(sizeof(int64_t) * (stotal + 1));
    int64_t *recv = malloc(sizeof(int64_t) * (rtotal + 1));
    size_t at = 0;
    for (int j = 0; j < size; ++j)
        for (size_t k = 0; k < sc[j]; ++k)
            send[at++] = 1000000 * rank + 1000 * j + (int64_t)k;
    for (int form = 0; form < 2; ++form) {
        memset(recv, 0, sizeof(int64_t) * rtotal);
        if (form == 0) {
            check(dt_alltoallv(ctx, "av", send, recv, sc, rc, DT_INT64), "alltoallv");
        } else {
            dt_request_h req;
            check(dt_alltoallv_async(ctx, "av.async", send, recv, sc, rc, DT_INT64, &req),
                  "alltoallv_async");
            check(dt_request_wait(req, -1), "alltoallv wait");
            dt_request_free(req);
        }
        at = 0;
        for (int i = 0; i < size; ++i)
            for (size_t k = 0; k < rc[i]; ++k, ++at)
                if (recv[at] != 1000000 * i + 1000 * rank + (int64_t)k) {
                    fprintf(stderr, "error: alltoallv form %d: element %zu from rank %d is "
                            "%lld\n", form, k, i, (long long)recv[at]);
                    exit(1);
                }
    }
    free(send);
    free(recv);
    free(sc);
    free(rc);
    printf("[uneven] alltoallv ok\n");
}

static void test_bad_arguments(void)
{
    size_t counts[64] = {0}, other[64] = {0};
    float buf[256] = {0};
    for (int r = 0; r < size; ++r)
        counts[r] = other[r] = 1;
    expect(dt_allgatherv(ctx, "x", buf, buf + 64, 1, NULL, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "recvcounts is NULL", "NULL recvcounts");
    expect(dt_allgatherv(ctx, "x", buf, buf + 64, 2, counts, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "sendcount = 2", "recvcounts[rank] != sendcount");
    other[0] = SIZE_MAX / 2 + 1;
    other[size - 1] = SIZE_MAX / 2 + 1;
    expect(dt_allgatherv(ctx, "x", buf, buf + 64, other[rank], other, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "too large", "a negative count in disguise");
    other[0] = other[size - 1] = (size_t)1 << 61; /* 2^62 floats: 2^64 bytes */
    if (size > 1)
        expect(dt_allgatherv(ctx, "x", buf, buf + 64, other[rank], other, DT_FLOAT32),
               DT_ERR_INVALID_ARGUMENT, "overflows", "an overflowing sum");
    /* Blocks of 2: buf + 1 overlaps recvbuf but is no rank's in-place block. */
    for (int r = 0; r < size; ++r)
        other[r] = 2;
    expect(dt_allgatherv(ctx, "x", buf + 1, buf, 2, other, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "overlap", "allgatherv overlap");
    expect(dt_alltoallv(ctx, "x", buf, buf + 64, NULL, counts, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "sendcounts is NULL", "NULL sendcounts");
    expect(dt_alltoallv(ctx, "x", buf, buf, counts, counts, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "overlap", "alltoallv overlap");
    expect(dt_alltoallv(ctx, "x", NULL, buf, counts, counts, DT_FLOAT32),
           DT_ERR_INVALID_ARGUMENT, "sendbuf is NULL", "NULL sendbuf");
    expect(dt_allgatherv(ctx, "x", buf, buf + 64, 1, counts, (dt_dtype_t)99),
           DT_ERR_INVALID_ARGUMENT, "dtype 99", "bad dtype");
    printf("[uneven] bad arguments ok\n");
}

/* The last rank disagrees; every rank must fail, then run a good call. */
static void test_mismatch(void)
{
    size_t counts[64], sc[64], rc[64];
    float send[8] = {0}, recv[256];
    char want[128];
    for (int r = 0; r < size; ++r)
        counts[r] = sc[r] = rc[r] = 2;
    if (rank == size - 1)
        counts[0] = 3;
    snprintf(want, sizeof want, "rank %d passes recvcounts[0] = 3 but rank 0 sends 2",
             size - 1);
    expect(dt_allgatherv(ctx, "gv.bad", send, recv, 2, counts, DT_FLOAT32), DT_ERR_MISMATCH,
           want, "disagreeing allgatherv");
    counts[0] = 2;
    check(dt_allgatherv(ctx, "gv.after", send, recv, 2, counts, DT_FLOAT32),
          "allgatherv after a mismatch");

    if (rank == 0)
        rc[size - 1] = 1;
    snprintf(want, sizeof want, "rank 0 expects recvcounts[%d] = 1 from rank %d, which sends "
             "sendcounts[0] = 2", size - 1, size - 1);
    expect(dt_alltoallv(ctx, "av.bad", send, recv, sc, rc, DT_FLOAT32), DT_ERR_MISMATCH, want,
           "disagreeing alltoallv");
    rc[size - 1] = 2;
    check(dt_alltoallv(ctx, "av.after", send, recv, sc, rc, DT_FLOAT32),
          "alltoallv after a mismatch");
    printf("[uneven] mismatch ok\n");
}

int main(void)
{
    check(dt_context_create(NULL, &ctx), "dt_context_create");
    check(dt_context_rank(ctx, &rank), "rank");
    check(dt_context_size(ctx, &size), "size");
    if (size > 64) {
        fprintf(stderr, "error: at most 64 ranks\n");
        return 1;
    }
    test_allgatherv();
    test_alltoallv();
    test_bad_arguments();
    if (size > 1)
        test_mismatch();
    check(dt_barrier(ctx, "end"), "barrier");
    printf("[uneven] ok\n");
    check(dt_context_destroy(ctx), "destroy");
    return 0;
}

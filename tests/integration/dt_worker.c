/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small program on the public C API that the integration tests run as a rank:
 *   dt_worker info                 print rank, size, local rank/size and transport
 *   dt_worker allreduce COUNT [N]  N float32 sum allreduces of COUNT elements, checked
 *   dt_worker badargs              invalid calls, each must fail with the right status
 * Any failure prints "error: <status>: <message>" and exits 1.
 */
#include <disttrain/disttrain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, dt_status_t status)
{
    fprintf(stderr, "error: %s: %s: %s\n", what, dt_status_string(status), dt_last_error());
    return 1;
}

static int cmd_info(dt_context_h ctx)
{
    int rank, size, local_rank, local_size;
    const char *transport;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    dt_context_local_rank(ctx, &local_rank);
    dt_context_local_size(ctx, &local_size);
    dt_context_transport(ctx, &transport);
    printf("rank=%d size=%d local_rank=%d local_size=%d transport=%s\n", rank, size,
           local_rank, local_size, transport);
    return 0;
}

static int cmd_allreduce(dt_context_h ctx, size_t count, int iterations)
{
    int rank, size;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    float *buf = malloc(count * sizeof(float) + 1);
    const float expected = (float)size * (float)(size + 1) / 2.0f;
    for (int it = 0; it < iterations; ++it) {
        for (size_t i = 0; i < count; ++i)
            buf[i] = (float)(rank + 1);
        dt_status_t s = dt_allreduce(ctx, "worker.allreduce", buf, buf, count, DT_FLOAT32,
                                     DT_SUM);
        if (s != DT_OK) {
            free(buf);
            return fail("dt_allreduce", s);
        }
        for (size_t i = 0; i < count; ++i) {
            if (buf[i] != expected) {
                fprintf(stderr, "error: element %zu is %g, expected %g\n", i, buf[i],
                        expected);
                free(buf);
                return 1;
            }
        }
    }
    free(buf);
    printf("allreduce ok count=%zu iterations=%d\n", count, iterations);
    return 0;
}

/* Each invalid call must return `want`; prints the message so tests can check it. */
static int expect(const char *what, dt_status_t got, dt_status_t want)
{
    printf("%s: %s: %s\n", what, dt_status_string(got), got == DT_OK ? "" : dt_last_error());
    if (got != want) {
        fprintf(stderr, "error: %s returned %s, expected %s\n", what, dt_status_string(got),
                dt_status_string(want));
        return 1;
    }
    return 0;
}

static int cmd_badargs(dt_context_h ctx)
{
    float a[8] = {0}, b[8] = {0};
    dt_request_h req = NULL;
    int bad = 0;
    bad += expect("null ctx", dt_allreduce(NULL, "x", a, b, 8, DT_FLOAT32, DT_SUM),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("null sendbuf", dt_allreduce(ctx, "x", NULL, b, 8, DT_FLOAT32, DT_SUM),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("negative count",
                  dt_allreduce(ctx, "x", a, b, (size_t)-1, DT_FLOAT32, DT_SUM),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("bad dtype", dt_allreduce(ctx, "x", a, b, 8, (dt_dtype_t)42, DT_SUM),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("bad op", dt_allreduce(ctx, "x", a, b, 8, DT_FLOAT32, (dt_reduce_op_t)-3),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("overlapping buffers",
                  dt_allreduce(ctx, "x", a, a + 1, 4, DT_FLOAT32, DT_SUM),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("bad root", dt_broadcast(ctx, "x", a, 8, DT_FLOAT32, 7),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("null sendbuf async",
                  dt_allreduce_async(ctx, "x", NULL, b, 8, DT_FLOAT32, DT_SUM, &req),
                  DT_ERR_INVALID_ARGUMENT);
    bad += expect("null request", dt_barrier_async(ctx, "x", NULL), DT_ERR_INVALID_ARGUMENT);
    bad += expect("null rank out", dt_context_rank(ctx, NULL), DT_ERR_INVALID_ARGUMENT);
    bad += expect("null version out", dt_get_version(NULL), DT_ERR_INVALID_ARGUMENT);
    bad += expect("wait null request", dt_request_wait(NULL, 0), DT_ERR_INVALID_ARGUMENT);
    bad += expect("zero count ok", dt_allreduce(ctx, "x", NULL, NULL, 0, DT_FLOAT32, DT_SUM),
                  DT_OK);
    bad += expect("async ok", dt_allreduce_async(ctx, "x", a, b, 8, DT_FLOAT32, DT_SUM, &req),
                  DT_OK);
    bad += expect("wait ok", dt_request_wait(req, 10000), DT_OK);
    bad += expect("free ok", dt_request_free(req), DT_OK);
    bad += expect("free null", dt_request_free(NULL), DT_OK);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dt_worker info|allreduce COUNT [N]|badargs\n");
        return 2;
    }
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(NULL, &ctx);
    if (s != DT_OK)
        return fail("dt_context_create", s);
    int rc;
    if (strcmp(argv[1], "info") == 0)
        rc = cmd_info(ctx);
    else if (strcmp(argv[1], "allreduce") == 0 && argc >= 3)
        rc = cmd_allreduce(ctx, strtoull(argv[2], NULL, 10), argc > 3 ? atoi(argv[3]) : 1);
    else if (strcmp(argv[1], "badargs") == 0)
        rc = cmd_badargs(ctx);
    else {
        fprintf(stderr, "dt_worker: unknown command '%s'\n", argv[1]);
        rc = 2;
    }
    s = dt_context_destroy(ctx);
    if (s != DT_OK && rc == 0)
        rc = fail("dt_context_destroy", s);
    return rc;
}

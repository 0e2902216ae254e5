/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rank program for the tests of how a job's contexts pair up across its ranks:
 *   dt_contexts_worker private-first  rank 0 first creates a context of its own (size 1
 *                                     through params), then every rank creates the job's
 *                                     context and checks an allreduce on it
 *   dt_contexts_worker rank0-only     rank 0 creates the job's context, the others none
 * Prints "ok ..." on success; any failure prints "error: <what>: <status>: <message>" and
 * exits 1.
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

static int rank_from_env(void)
{
    const char *r = getenv("DISTTRAIN_RANK");
    return r != NULL ? atoi(r) : 0;
}

/* An int32 sum of base + rank + i over n elements, checked element by element: contexts
 * paired with the wrong ones on other ranks add up other bases. */
static int check_sum(dt_context_h ctx, const char *name, int base)
{
    enum { n = 64 };
    int v[n], rank = 0, size = 0;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    for (int i = 0; i < n; ++i)
        v[i] = base + rank + i;
    dt_status_t s = dt_allreduce(ctx, name, v, v, n, DT_INT32, DT_SUM);
    if (s != DT_OK)
        return fail("dt_allreduce", s);
    for (int i = 0; i < n; ++i) {
        int expected = size * (base + i) + size * (size - 1) / 2;
        if (v[i] != expected) {
            fprintf(stderr, "error: %s: element %d is %d, expected %d\n", name, i, v[i],
                    expected);
            return 1;
        }
    }
    return 0;
}

static int private_first(void)
{
    dt_context_h own = NULL, job = NULL;
    if (rank_from_env() == 0) {
        dt_context_params_t p = {0};
        p.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE |
                       DT_CONTEXT_PARAM_FIELD_LOCAL_RANK | DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE;
        p.size = 1;
        p.local_size = 1;
        dt_status_t s = dt_context_create(&p, &own);
        if (s != DT_OK)
            return fail("dt_context_create (a context of its own)", s);
    }
    dt_status_t s = dt_context_create(NULL, &job);
    if (s != DT_OK) {
        dt_context_destroy(own);
        return fail("dt_context_create (the job's context)", s);
    }
    int rc = check_sum(job, "job", 100);
    if (rc == 0 && own != NULL)
        rc = check_sum(own, "own", 7);
    dt_context_destroy(job);
    dt_context_destroy(own);
    if (rc == 0)
        printf("ok private-first\n");
    return rc;
}

static int rank0_only(void)
{
    if (rank_from_env() != 0)
        return 0;
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(NULL, &ctx);
    if (s != DT_OK)
        return fail("dt_context_create", s);
    dt_context_destroy(ctx);
    printf("ok rank0-only\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "private-first") == 0)
        return private_first();
    if (argc >= 2 && strcmp(argv[1], "rank0-only") == 0)
        return rank0_only();
    fprintf(stderr, "usage: dt_contexts_worker private-first|rank0-only\n");
    return 2;
}

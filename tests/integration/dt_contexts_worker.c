/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rank program for the tests of how a job's contexts pair up across its ranks:
 *   dt_contexts_worker private-first  rank 0 first creates a context of its own (size 1
 *                                     through params), then every rank creates the job's
 *                                     context and checks an allreduce on it
 *   dt_contexts_worker rank0-only     rank 0 creates the job's context, the others none:
 *                                     they stay up for 3 s (as if busy elsewhere)
 *   dt_contexts_worker skip-create    rank 1 exits 0 at once; the others create the job's
 *                                     context
 *   dt_contexts_worker threads N      N threads create a context each, named "t<i>", rank
 *                                     0's in the order 0..N-1 and the other ranks' in the
 *                                     reverse order, and check allreduces on them
 *   dt_contexts_worker header-1.3     a process alone passes params with the name bit and
 *                                     a malformed name, as built against API 1.3 (no name:
 *                                     created) and against this header (refused)
 * Prints "ok ..." on success; any failure prints "error: <what>: <status>: <message>" and
 * exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <disttrain/disttrain.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Creates and destroys the job's context, then says "ok <mode>". */
static int create_and_destroy(const char *mode)
{
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(NULL, &ctx);
    if (s != DT_OK)
        return fail("dt_context_create", s);
    dt_context_destroy(ctx);
    printf("ok %s\n", mode);
    return 0;
}

static int rank0_only(void)
{
    if (rank_from_env() != 0) {
        // Alive: a rank that exited would be named as such, not as one that never came.
        struct timespec busy = {3, 0};
        nanosleep(&busy, NULL);
        return 0;
    }
    return create_and_destroy("rank0-only");
}

struct thread_arg {
    int index;
    int delay_ms;
    int rc;
};

static void *named_context_thread(void *p)
{
    struct thread_arg *a = p;
    char name[32];
    snprintf(name, sizeof name, "t%d", a->index);
    struct timespec delay = {0, (long)a->delay_ms * 1000000L};
    nanosleep(&delay, NULL);
    dt_context_params_t params = {0};
    params.field_mask = DT_CONTEXT_PARAM_FIELD_NAME;
    params.name = name;
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(&params, &ctx);
    if (s != DT_OK) {
        a->rc = fail(name, s);
        return NULL;
    }
    for (int loop = 0; loop < 5 && a->rc == 0; ++loop)
        a->rc = check_sum(ctx, name, 1000 * (a->index + 1));
    dt_context_destroy(ctx);
    return NULL;
}

static int threads(int n)
{
    enum { max_threads = 8 };
    if (n < 1 || n > max_threads)
        return 2;
    pthread_t t[max_threads];
    struct thread_arg a[max_threads];
    int rank = rank_from_env(), rc = 0;
    for (int i = 0; i < n; ++i) {
        int order = rank == 0 ? i : n - 1 - i; /* the ranks create them in other orders */
        a[i] = (struct thread_arg){i, 30 * order, 0};
        pthread_create(&t[i], NULL, named_context_thread, &a[i]);
    }
    for (int i = 0; i < n; ++i) {
        pthread_join(t[i], NULL);
        rc |= a[i].rc;
    }
    if (rc == 0)
        printf("ok threads %d\n", n);
    return rc;
}

static int header_1_3(void)
{
    dt_context_params_t p = {0};
    p.field_mask = DT_CONTEXT_PARAM_FIELD_NAME;
    p.name = "not a name!";
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create_versioned(DT_API_MAJOR, 3, &p, &ctx);
    if (s != DT_OK)
        return fail("dt_context_create as built against API 1.3", s);
    dt_context_destroy(ctx);
    s = dt_context_create(&p, &ctx);
    printf("this header: %s: %s\n", dt_status_string(s), s != DT_OK ? dt_last_error() : "");
    if (s == DT_OK)
        dt_context_destroy(ctx);
    return s == DT_ERR_INVALID_CONFIG ? 0 : 1;
}

static int skip_create(void)
{
    if (rank_from_env() == 1)
        return 0;
    return create_and_destroy("skip-create");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "private-first") == 0)
        return private_first();
    if (argc >= 2 && strcmp(argv[1], "rank0-only") == 0)
        return rank0_only();
    if (argc >= 2 && strcmp(argv[1], "skip-create") == 0)
        return skip_create();
    if (argc >= 3 && strcmp(argv[1], "threads") == 0)
        return threads(atoi(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "header-1.3") == 0)
        return header_1_3();
    fprintf(stderr, "usage: dt_contexts_worker private-first|rank0-only|skip-create|"
                    "threads N|header-1.3\n");
    return 2;
}

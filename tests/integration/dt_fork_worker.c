/* SPDX-License-Identifier: Apache-2.0 */
/* A rank program for test_fork.py: fork() after the context exists, as a data loader's
 * worker or a helper process is made. The child, which inherits copies of the context,
 * a group and a request in flight but not the engine thread, checks that every call on
 * them fails with DT_ERR_INVALID_STATE naming the parent, then destroys and frees its
 * copies (DT_OK, releasing nothing of the parent's) and exits with exit(), so atexit
 * handlers run. The parent, once the child is gone, checks that its context, group and
 * request still work with the other ranks, and prints "[fork] ok".
 * Failures print "error: ..." and exit 1. */
#define _POSIX_C_SOURCE 200809L
#include <disttrain/disttrain.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the parent waits for the child before it kills it and fails: far more than
 * the child needs, which makes no collective; without it a hung child would outlive
 * the job. */
#define CHILD_LIMIT_MS 30000

static int rank, size;
static int child_failures;

static void check(dt_status_t s, const char *what)
{
    if (s != DT_OK) {
        fprintf(stderr, "error: %s: %s: %s\n", what, dt_status_string(s), dt_last_error());
        exit(1);
    }
}

/* In the child: a call on the parent's handles is refused, naming the parent. */
static void expect_refused(dt_status_t got, const char *what)
{
    char owner[64];
    snprintf(owner, sizeof owner, "belongs to process %ld", (long)getppid());
    if (got != DT_ERR_INVALID_STATE || strstr(dt_last_error(), owner) == NULL) {
        fprintf(stderr, "error: child: %s: got %s (%s), want DT_ERR_INVALID_STATE saying "
                "it %s\n", what, dt_status_string(got), got ? dt_last_error() : "",
                owner);
        ++child_failures;
    }
}

static void expect_ok_in_child(dt_status_t got, const char *what)
{
    if (got != DT_OK) {
        fprintf(stderr, "error: child: %s: %s: %s\n", what, dt_status_string(got),
                dt_last_error());
        ++child_failures;
    }
}

static void child(dt_context_h ctx, dt_context_h group, dt_request_h req)
{
    float x = 1.0f;
    int value = 0, done = 0;
    dt_context_h subgroup = NULL;
    expect_refused(dt_context_rank(ctx, &value), "dt_context_rank");
    expect_refused(dt_context_status(ctx), "dt_context_status");
    expect_refused(dt_allreduce(ctx, "child", &x, &x, 1, DT_FLOAT32, DT_SUM), "dt_allreduce");
    expect_refused(dt_barrier(group, "child"), "dt_barrier on the group");
    expect_refused(dt_group_create(ctx, &rank, 1, &subgroup), "dt_group_create");
    expect_refused(dt_request_test(req, &done), "dt_request_test");
    expect_refused(dt_request_wait(req, -1), "dt_request_wait");
    expect_refused(dt_context_abort(ctx), "dt_context_abort");
    expect_ok_in_child(dt_request_free(req), "dt_request_free");
    expect_ok_in_child(dt_context_destroy(group), "dt_context_destroy on the group");
    expect_ok_in_child(dt_context_destroy(ctx), "dt_context_destroy");
    printf("[fork] child done, %d failures\n", child_failures);
    exit(child_failures == 0 ? 0 : 1);
}

/* Waits for the child; kills it after CHILD_LIMIT_MS (it hung) and fails. */
static void wait_child(pid_t pid)
{
    int status = 0;
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited += 10) {
        if (waited >= CHILD_LIMIT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "error: the forked child had not exited after %d ms; killed "
                    "it (a call on the parent's context hung in it)\n", CHILD_LIMIT_MS);
            exit(1);
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "error: the forked child failed (wait status %d)\n", status);
        exit(1);
    }
}

/* An allreduce of rank + i % 7 on ctx, checked against the sum over its n ranks. */
static void allreduce_checked(dt_context_h ctx, int n, int my, const char *name)
{
    enum { count = 4096 };
    static float buf[count];
    for (int i = 0; i < count; ++i)
        buf[i] = (float)(my + i % 7);
    check(dt_allreduce(ctx, name, buf, buf, count, DT_FLOAT32, DT_SUM), name);
    for (int i = 0; i < count; ++i)
        if (buf[i] != (float)(n * (n - 1) / 2 + n * (i % 7))) {
            fprintf(stderr, "error: %s: element %d is %g\n", name, i, buf[i]);
            exit(1);
        }
}

int main(void)
{
    dt_context_h ctx = NULL, group = NULL;
    check(dt_context_create(NULL, &ctx), "dt_context_create");
    check(dt_context_rank(ctx, &rank), "dt_context_rank");
    check(dt_context_size(ctx, &size), "dt_context_size");
    int *all = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; ++r)
        all[r] = size - 1 - r; /* reversed: group ranks differ from the job's */
    check(dt_group_create(ctx, all, size, &group), "dt_group_create");
    allreduce_checked(ctx, size, rank, "before");

    float pending = (float)(rank + 1);
    dt_request_h req = NULL;
    check(dt_allreduce_async(ctx, "pending", &pending, &pending, 1, DT_FLOAT32, DT_SUM,
                             &req), "dt_allreduce_async");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("error: fork");
        return 1;
    }
    if (pid == 0)
        child(ctx, group, req);
    wait_child(pid);

    check(dt_request_wait(req, -1), "dt_request_wait on the pending allreduce");
    check(dt_request_free(req), "dt_request_free");
    if (pending != (float)(size * (size + 1) / 2)) {
        fprintf(stderr, "error: the pending allreduce gave %g\n", pending);
        return 1;
    }
    for (int i = 0; i < 50; ++i)
        allreduce_checked(ctx, size, rank, "after");
    int group_rank = 0;
    check(dt_context_rank(group, &group_rank), "dt_context_rank on the group");
    for (int i = 0; i < 10; ++i)
        allreduce_checked(group, size, group_rank, "group after");
    check(dt_context_status(ctx), "dt_context_status");
    check(dt_barrier(ctx, "end"), "dt_barrier");
    check(dt_context_destroy(group), "dt_context_destroy on the group");
    check(dt_context_destroy(ctx), "dt_context_destroy");
    free(all);
    printf("[fork] ok\n");
    return 0;
}

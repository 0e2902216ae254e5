/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rank of an elastic job (DISTTRAIN_ELASTIC=1) on the public C API:
 *   dt_elastic_worker STEPS VICTIM [VICTIM2]
 * runs STEPS allreduces of 1 per rank (each must sum to the job's size), 10 ms apart. At
 * step 3 the rank(s) VICTIM (by their rank at the start; never a replacement) kill
 * themselves with SIGKILL. The others get DT_ERR_PEER_LOST, call dt_context_reform (again
 * if one more dies while they sync after it), print their new rank and size and the time
 * the re-form took, and repeat the step. Before each step every rank asks
 * dt_context_poll_joiners whether replacements wait, and re-forms to let them in. After
 * creating the context and after each re-form, rank 0's step count is everyone's. Prints
 * "done rank=R size=S steps=N" at the end.
 * For timing (CLOCK_MONOTONIC, shared by the processes of one machine): a victim prints
 * "killing t_ms=T" before it dies; after each re-form a rank prints "resumed
 * from_step=A step=B" (B below A: commits lost to the sync) and, once its first
 * allreduce after it has completed, "recovered t_ms=T size=S".
 * Environment:
 *   DT_WORKER_UNTIL_SIZE=N   go on past STEPS until the job has N ranks (growth)
 *   DT_WORKER_DIE_IN_REFORM=R[:MS]  the rank first numbered R dies (SIGKILL) MS ms
 *                            (default 2) into its first re-form, while the others are
 *                            re-forming with it (one takes about 10 ms on one machine)
 *   DT_WORKER_SLOW_RANK=R:MS  at step 3 the rank first numbered R spends MS ms before
 *                            the step's allreduce (a straggler: a long data load)
 *   DT_WORKER_STEPS_AFTER_REFORM=N  after a re-form that lost ranks, run N more steps
 *                            and end (for a job whose STEPS is "until something breaks")
 *   DT_WORKER_POLL_FROM_STEP=K  ask for joiners only from step K on (a replacement then
 *                            waits to be let in until then, unless a loss lets it in)
 *   DT_WORKER_DIE_IN_GROW=R[:MS]  the rank first numbered R dies (SIGKILL) MS ms
 *                            (default 2) into the first re-form that lets a replacement
 *                            in; every rank goes on past STEPS until 10 steps after it
 *   DT_WORKER_JOINER_WAITS_MS=MS  a replacement waits MS ms before it creates its context
 *                            (past the re-form after the loss: a step boundary lets it in)
 *   DT_WORKER_JOINER_DIES_MS=MS  a replacement waits 200 ms (past the re-form after the
 *                            loss), prints "joining", and dies (SIGKILL) MS ms later,
 *                            while it waits to be let in
 * A peer that went silent (DT_ERR_TIMEOUT: a host cut off) is lost as much as one that
 * died: the survivors re-form without it too.
 *   dt_elastic_worker reform      call dt_context_reform at once, print its status
 * Any other failure prints "error: <what>: <status>: <message>" and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <disttrain/disttrain.h>

#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int fail(const char *what, dt_status_t status)
{
    fprintf(stderr, "error: %s: %s: %s\n", what, dt_status_string(status), dt_last_error());
    return 1;
}

static void die_now(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

/* Kills this process ms from now, whatever it is doing then (a re-form). */
static void die_in(int ms)
{
    if (ms <= 0)
        raise(SIGKILL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = die_now;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval t = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &t, NULL);
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

/* Everyone takes rank 0's step: the survivors after a re-form, a replacement at its start. */
static dt_status_t sync_step(dt_context_h ctx, int *step)
{
    int64_t s = *step;
    dt_status_t status = dt_broadcast(ctx, "sync.step", &s, 1, DT_INT64, 0);
    *step = (int)s;
    return status;
}

static int is_loss(dt_status_t s)
{
    return s == DT_ERR_PEER_LOST || s == DT_ERR_TIMEOUT;
}

/*
 * After a loss: re-forms, prints the new rank and size, and takes rank 0's step. A member
 * can die right after the re-form, while the others sync with it: that is one more loss,
 * and the survivors re-form again, as a trainer would. Returns 0, or 1 on any other failure
 * (printed).
 */
static int reform_after_loss(dt_context_h ctx, int *rank, int *size, int *step)
{
    for (;;) {
        const double lost_at = now_ms();
        dt_status_t s = dt_context_reform(ctx);
        if (s != DT_OK) {
            fail("dt_context_reform", s);
            /* No membership is left: later calls fail at once, naming why. */
            int64_t one = 1;
            s = dt_allreduce(ctx, "after", &one, &one, 1, DT_INT64, DT_SUM);
            fprintf(stderr, "after a failed re-form: %s: %s\n", dt_status_string(s),
                    dt_last_error());
            return 1;
        }
        const int old_rank = *rank;
        dt_context_rank(ctx, rank);
        dt_context_size(ctx, size);
        printf("reformed step=%d old_rank=%d rank=%d size=%d took_ms=%.1f\n", *step, old_rank,
               *rank, *size, now_ms() - lost_at);
        const int from_step = *step;
        s = sync_step(ctx, step);
        if (is_loss(s))
            continue;
        if (s != DT_OK)
            return fail("sync_step", s);
        printf("resumed from_step=%d step=%d\n", from_step, *step);
        return 0;
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "reform") == 0) {
        dt_context_h ctx = NULL;
        dt_status_t s = dt_context_create(NULL, &ctx);
        if (s != DT_OK)
            return fail("dt_context_create", s);
        s = dt_context_reform(ctx);
        printf("reform: %s: %s\n", dt_status_string(s), dt_last_error());
        dt_context_destroy(ctx);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: dt_elastic_worker STEPS VICTIM [VICTIM2]\n");
        return 2;
    }
    int steps = atoi(argv[1]);
    const int victim = atoi(argv[2]);
    const int victim2 = argc > 3 ? atoi(argv[3]) : -1;
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (getenv("DISTTRAIN_ELASTIC_JOIN") != NULL && env_int("DT_WORKER_JOINER_DIES_MS", 0) > 0) {
        /* Late enough for the re-form after the loss to be over: it must not let it in. */
        struct timespec late = {0, 200 * 1000 * 1000};
        nanosleep(&late, NULL);
        printf("joining t_ms=%.1f\n", now_ms());
        die_in(env_int("DT_WORKER_JOINER_DIES_MS", 0));
    }
    const int joiner_waits_ms = env_int("DT_WORKER_JOINER_WAITS_MS", 0);
    if (getenv("DISTTRAIN_ELASTIC_JOIN") != NULL && joiner_waits_ms > 0) {
        struct timespec wait = {joiner_waits_ms / 1000,
                                (long)(joiner_waits_ms % 1000) * 1000 * 1000};
        nanosleep(&wait, NULL);
    }
    dt_context_h ctx = NULL;
    dt_status_t s = dt_context_create(NULL, &ctx);
    if (s != DT_OK)
        return fail("dt_context_create", s);
    int first_rank = 0, rank = 0, size = 0;
    dt_context_rank(ctx, &first_rank);
    rank = first_rank;
    dt_context_size(ctx, &size);

    const int replacement = getenv("DISTTRAIN_ELASTIC_JOIN") != NULL;
    const int until_size = env_int("DT_WORKER_UNTIL_SIZE", 0);
    const int die_in_reform = replacement ? -1 : env_int("DT_WORKER_DIE_IN_REFORM", -1);
    const char *die_spec = getenv("DT_WORKER_DIE_IN_REFORM");
    const char *die_ms = die_spec ? strchr(die_spec, ':') : NULL;
    const int die_after_ms = die_ms ? atoi(die_ms + 1) : 2;
    const char *grow_spec = getenv("DT_WORKER_DIE_IN_GROW");
    const char *grow_ms = grow_spec ? strchr(grow_spec, ':') : NULL;
    int await_grow = grow_spec != NULL && !replacement; /* not yet let a replacement in */
    const int steps_after_reform = env_int("DT_WORKER_STEPS_AFTER_REFORM", -1);
    const int poll_from_step = env_int("DT_WORKER_POLL_FROM_STEP", 0);
    const char *slow_spec = getenv("DT_WORKER_SLOW_RANK");
    const char *slow_ms = slow_spec ? strchr(slow_spec, ':') : NULL;
    int slow_pending = slow_ms && !replacement && atoi(slow_spec) == first_rank;
    int step = 0;
    int just_reformed = 0; /* print "recovered" after the next allreduce */
    /* A member can die as a replacement comes in: the ranks then re-form without it. */
    s = sync_step(ctx, &step);
    if (is_loss(s) && reform_after_loss(ctx, &rank, &size, &step) != 0)
        return 1;
    if (s != DT_OK && !is_loss(s))
        return fail("sync_step", s);
    if (grow_spec && replacement && steps < step + 10)
        steps = step + 10;
    while (step < steps || size < until_size || await_grow) {
        s = DT_OK; /* a failed dt_context_poll_joiners below is this step's failure */
        int waiting = 0;
        if (step >= poll_from_step &&
            (s = dt_context_poll_joiners(ctx, &waiting)) == DT_OK && waiting > 0) {
            const int first_grow = await_grow;
            if (first_grow && atoi(grow_spec) == first_rank) {
                const int ms = grow_ms ? atoi(grow_ms + 1) : 2;
                printf("killing t_ms=%.1f\n", now_ms() + ms);
                die_in(ms);
            }
            await_grow = 0;
            if ((s = dt_context_reform(ctx)) != DT_OK)
                return fail("dt_context_reform (growing)", s);
            dt_context_rank(ctx, &rank);
            dt_context_size(ctx, &size);
            printf("grew step=%d rank=%d size=%d\n", step, rank, size);
            int from_step = step;
            if ((s = sync_step(ctx, &step)) == DT_OK)
                printf("resumed from_step=%d step=%d\n", from_step, step);
            else if (!is_loss(s))
                return fail("sync_step", s);
            else if (reform_after_loss(ctx, &rank, &size, &step) != 0)
                return 1;
            if (first_grow && steps < step + 10)
                steps = step + 10;
            just_reformed = 1;
            continue; /* as a replacement does after its sync: ask again, then the step */
        }
        if (step == 3 && !replacement && (first_rank == victim || first_rank == victim2)) {
            printf("killing t_ms=%.1f\n", now_ms());
            raise(SIGKILL);
        }
        if (step == 3 && slow_pending) {
            slow_pending = 0;
            const int ms = atoi(slow_ms + 1);
            struct timespec slow = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
            nanosleep(&slow, NULL);
        }
        int64_t one = 1;
        if (s == DT_OK)
            s = dt_allreduce(ctx, "step", &one, &one, 1, DT_INT64, DT_SUM);
        if (is_loss(s)) {
            if (first_rank == die_in_reform) {
                printf("killing t_ms=%.1f\n", now_ms() + die_after_ms);
                die_in(die_after_ms);
            }
            const int size_before = size;
            if (reform_after_loss(ctx, &rank, &size, &step) != 0)
                return 1;
            if (size >= size_before)
                await_grow = 0; /* a replacement came in with the loss: no grow to die in */
            just_reformed = 1;
            if (steps_after_reform >= 0)
                steps = step + steps_after_reform;
            continue; /* the step runs again in the new job */
        }
        if (s != DT_OK)
            return fail("dt_allreduce", s);
        if (one != size) {
            fprintf(stderr, "error: step %d summed to %lld on a job of %d ranks\n", step,
                    (long long)one, size);
            return 1;
        }
        if (just_reformed) {
            printf("recovered t_ms=%.1f size=%d\n", now_ms(), size);
            just_reformed = 0;
        }
        ++step;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    printf("done rank=%d size=%d steps=%d\n", rank, size, step);
    dt_context_destroy(ctx);
    return 0;
}

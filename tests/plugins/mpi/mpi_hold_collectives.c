/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An LD_PRELOAD shim for the MPI tests: on the ranks DT_TEST_MPI_HOLD names
 * ("RANK:MS,RANK:MS", world ranks), MPI_Iallreduce does its part of the allreduce at once
 * (a blocking MPI_Allreduce) and hands back a request that MPI reports complete only MS
 * milliseconds later: a rank whose part is done but which is still waiting for the
 * collective to finish, as a rank that the scheduler put aside looks. With the variable
 * set, the other ranks take the same path with no hold (a blocking collective must not
 * meet a nonblocking one); without it, MPI_Iallreduce is the real one.
 *
 * MPI's functions are looked up with dlsym(RTLD_NEXT) when first needed, so the shim
 * links no MPI library, and preloading it into processes without MPI (the launcher,
 * mpirun) loads nothing more.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* MPI's function `name`, of the type of `fn` (a pointer); looked up once. */
#define REAL(fn, name)                                                                    \
    do {                                                                                  \
        if ((fn) == NULL)                                                                 \
            *(void **)&(fn) = dlsym(RTLD_NEXT, name);                                     \
    } while (0)

static int (*real_status_set_elements)(MPI_Status *, MPI_Datatype, int);
static int (*real_status_set_cancelled)(MPI_Status *, int);
static int (*real_grequest_complete)(MPI_Request);

/* -1: the variable is not set; else this rank's hold (0 when it is not named). */
static long hold_ms_of_this_rank(void)
{
    const char *spec = getenv("DT_TEST_MPI_HOLD");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (spec == NULL || rank == NULL)
        return -1;
    long me = strtol(rank, NULL, 10);
    for (const char *p = spec; *p != '\0';) {
        char *end;
        long r = strtol(p, &end, 10);
        if (*end != ':')
            return 0;
        long ms = strtol(end + 1, &end, 10);
        if (r == me)
            return ms;
        if (*end != ',')
            return 0;
        p = end + 1;
    }
    return 0;
}

/* extra: the allreduce's datatype (MPI_BYTE itself is a data symbol of libmpi, which
   the shim must not need at load time). */
static int query(void *extra, MPI_Status *status)
{
    real_status_set_elements(status, *(MPI_Datatype *)extra, 0);
    real_status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

struct hold {
    MPI_Request request;
    long ms;
};

static void *complete_later(void *arg)
{
    struct hold *h = arg;
    struct timespec ts = {h->ms / 1000, (h->ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    real_grequest_complete(h->request);
    free(h);
    return NULL;
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    typedef int (*iallreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                                 MPI_Request *);
    typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    typedef int (*grequest_start_fn)(MPI_Grequest_query_function *,
                                     MPI_Grequest_free_function *,
                                     MPI_Grequest_cancel_function *, void *, MPI_Request *);
    static iallreduce_fn real;
    static allreduce_fn real_allreduce;
    static grequest_start_fn real_grequest_start;
    REAL(real, "MPI_Iallreduce");
    REAL(real_allreduce, "MPI_Allreduce");
    REAL(real_grequest_start, "MPI_Grequest_start");
    REAL(real_grequest_complete, "MPI_Grequest_complete");
    REAL(real_status_set_elements, "MPI_Status_set_elements");
    REAL(real_status_set_cancelled, "MPI_Status_set_cancelled");
    long ms = hold_ms_of_this_rank();
    if (ms < 0)
        return real(sendbuf, recvbuf, count, datatype, op, comm, request);
    /* Every rank takes the same path: a blocking collective must not meet a
       nonblocking one. */
    int rc = real_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    static MPI_Datatype types[64];
    static int next_type;
    MPI_Datatype *type = &types[__atomic_fetch_add(&next_type, 1, __ATOMIC_RELAXED) % 64];
    *type = datatype;
    rc = real_grequest_start(query, free_fn, cancel_fn, type, request);
    if (rc != MPI_SUCCESS)
        return rc;
    if (ms == 0)
        return real_grequest_complete(*request);
    struct hold *h = malloc(sizeof *h);
    if (h == NULL)
        return real_grequest_complete(*request); /* no memory for the hold: no hold */
    h->request = *request;
    h->ms = ms;
    pthread_t thread;
    pthread_create(&thread, NULL, complete_later, h);
    pthread_detach(thread);
    return MPI_SUCCESS;
}

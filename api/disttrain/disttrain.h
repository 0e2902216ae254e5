/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain public C API.
 *
 * This header is the whole contract between libdisttrain.so and its users. It is
 * C99 and C++ clean, uses no compiler extension and exposes no C++ type.
 *
 * Conventions (see shared/docs/CONVENTIONS.md):
 *  - functions are dt_<object>_<verb>, enum constants and macros DT_*;
 *  - every function returns dt_status_t; output pointers come last and are written
 *    only when the call returns DT_OK;
 *  - after an error return, dt_last_error() gives a message for the calling thread that
 *    names what was wrong and how to fix it;
 *  - handles come in create/destroy pairs; destroy accepts NULL.
 */
#ifndef DISTTRAIN_DISTTRAIN_H
#define DISTTRAIN_DISTTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DT_BUILDING_LIBRARY)
#define DT_API __attribute__((visibility("default")))
#else
#define DT_API
#endif

/** API version of this header. A library accepts the same major and a compiled minor
 *  that is not newer than its own. */
#define DT_API_MAJOR 1
#define DT_API_MINOR 4

/* ------------------------------------------------------------------------------------ */
/* Status codes                                                                           */
/* ------------------------------------------------------------------------------------ */

/**
 * Status of every call. DT_OK is 0, DT_INPROGRESS is 1, errors are negative and grouped
 * in ranges by kind. Values are never renumbered; new codes are appended in a range.
 */
typedef enum dt_status {
    DT_OK = 0,
    DT_INPROGRESS = 1, /**< the request has not completed yet */

    /* Usage errors: the caller passed something wrong. [-1, -99] */
    DT_ERR_INVALID_ARGUMENT = -1, /**< a NULL pointer, a bad count, an unknown enum */
    DT_ERR_INVALID_CONFIG = -2,   /**< an environment variable or param has a bad value */
    DT_ERR_VERSION = -3,          /**< header and library API versions do not match */
    DT_ERR_UNSUPPORTED = -4,      /**< the operation is not supported by this build */
    DT_ERR_INVALID_STATE = -5,    /**< the object is not in a state that allows the call */
    DT_ERR_MISMATCH = -6,         /**< ranks disagree on an operation's arguments */
    DT_ERR_NO_MEMORY = -7,        /**< an allocation failed */

    /* Plugin errors: a plugin could not be found, loaded or negotiated. [-100, -199] */
    DT_ERR_PLUGIN_NOT_FOUND = -100,
    DT_ERR_PLUGIN_LOAD = -101,
    DT_ERR_PLUGIN_ABI = -102,

    /* Transport and bootstrap errors. [-200, -299] */
    DT_ERR_TRANSPORT = -200, /**< a socket or transport library call failed */
    DT_ERR_CONNECT = -201,   /**< a connection could not be made */
    DT_ERR_PROTOCOL = -202,  /**< a peer sent something malformed */
    DT_ERR_AUTH = -203,      /**< the job token did not match */
    DT_ERR_STORE = -204,     /**< the rendezvous store failed */

    /* Peer errors: another rank is gone or the job was torn down. [-300, -399] */
    DT_ERR_PEER_LOST = -300,
    DT_ERR_ABORTED = -301,

    /* Time-outs. [-400, -499] */
    DT_ERR_TIMEOUT = -400,

    /* Internal errors: a bug in libdisttrain or a plugin. [-900, -999] */
    DT_ERR_INTERNAL = -900
} dt_status_t;

#define DT_IS_USAGE_ERROR(s) ((s) <= -1 && (s) >= -99)
#define DT_IS_PLUGIN_ERROR(s) ((s) <= -100 && (s) >= -199)
#define DT_IS_TRANSPORT_ERROR(s) ((s) <= -200 && (s) >= -299)
#define DT_IS_PEER_ERROR(s) ((s) <= -300 && (s) >= -399)
#define DT_IS_TIMEOUT_ERROR(s) ((s) <= -400 && (s) >= -499)
#define DT_IS_INTERNAL_ERROR(s) ((s) <= -900 && (s) >= -999)

/**
 * A constant, static string naming the status ("DT_ERR_TIMEOUT: operation timed out").
 * Never NULL; unknown values give "unknown status". Thread safe, never blocks.
 */
DT_API const char *dt_status_string(dt_status_t status);

/**
 * The message written by the last call on this thread that returned an error: what was
 * wrong and what to do. The string is thread-local and valid until the next libdisttrain
 * call on this thread; it is "" if no call on this thread has failed. Never NULL.
 */
DT_API const char *dt_last_error(void);

/* ------------------------------------------------------------------------------------ */
/* Versions                                                                               */
/* ------------------------------------------------------------------------------------ */

/** Version of the loaded library. */
typedef struct dt_version {
    int api_major;  /**< DT_API_MAJOR of the library */
    int api_minor;  /**< DT_API_MINOR of the library */
    int patch;      /**< release patch level */
    const char *string; /**< "1.4.0", static */
} dt_version_t;

/** Writes the version of the loaded library to *out. Thread safe. Errors:
 *  DT_ERR_INVALID_ARGUMENT if out is NULL. */
DT_API dt_status_t dt_get_version(dt_version_t *out);

/* ------------------------------------------------------------------------------------ */
/* Data types and reduction operators                                                     */
/* ------------------------------------------------------------------------------------ */

typedef enum dt_dtype {
    DT_FLOAT32 = 0,
    DT_FLOAT64 = 1,
    /** IEEE 754 binary16. Each step of a reduction (one value added to a partial
     *  result) computes in float32 and rounds to 16 bits, as NCCL's do: on n ranks a
     *  result can be off the correctly rounded one by the roundings of n - 1 partial
     *  results, and which values meet first depends on the path and on which rank holds
     *  which value. */
    DT_FLOAT16 = 2,
    DT_BFLOAT16 = 3, /**< bfloat16; reductions round each step as DT_FLOAT16's do */
    DT_INT8 = 4,
    DT_UINT8 = 5,
    DT_INT32 = 6,
    DT_INT64 = 7,
    DT_DTYPE_COUNT_ = 8 /**< number of dtypes; not a dtype */
} dt_dtype_t;

typedef enum dt_reduce_op {
    DT_SUM = 0,
    /** Sum divided by the number of ranks. Integers divide the sum (truncating), which
     *  wraps as DT_SUM's does; float16 divides each rank's value before the sum, as NCCL
     *  does, so that the mean of values near 65504 does not overflow (a quotient that
     *  would round up past 65504 / ranks rounds toward zero; beyond three ranks the
     *  rounding of partial sums can still overflow within a few steps of 65504). */
    DT_AVG = 1,
    DT_MIN = 2,
    DT_MAX = 3,
    DT_PROD = 4,
    DT_REDUCE_OP_COUNT_ = 5 /**< number of operators; not an operator */
} dt_reduce_op_t;

/** Size in bytes of one element of dtype, or 0 for an unknown dtype. Thread safe. */
DT_API size_t dt_dtype_size(dt_dtype_t dtype);

/** Constant name of the dtype ("float32"), or "unknown". Thread safe. */
DT_API const char *dt_dtype_name(dt_dtype_t dtype);

/** Constant name of the reduction operator ("sum"), or "unknown". Thread safe. */
DT_API const char *dt_reduce_op_name(dt_reduce_op_t op);

/* ------------------------------------------------------------------------------------ */
/* Context                                                                                */
/* ------------------------------------------------------------------------------------ */

/** A member of a job: its rank, the transport to its peers and the background engine. */
typedef struct dt_context *dt_context_h;

/** Bits of dt_context_params_t.field_mask: which fields the caller set. */
enum dt_context_param_field {
    DT_CONTEXT_PARAM_FIELD_RANK = 1u << 0,
    DT_CONTEXT_PARAM_FIELD_SIZE = 1u << 1,
    DT_CONTEXT_PARAM_FIELD_LOCAL_RANK = 1u << 2,
    DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE = 1u << 3,
    DT_CONTEXT_PARAM_FIELD_STORE_ADDR = 1u << 4,
    DT_CONTEXT_PARAM_FIELD_JOB_TOKEN = 1u << 5,
    DT_CONTEXT_PARAM_FIELD_TRANSPORT = 1u << 6,
    DT_CONTEXT_PARAM_FIELD_TIMEOUT_MS = 1u << 7,
    DT_CONTEXT_PARAM_FIELD_ORDERED = 1u << 8,
    DT_CONTEXT_PARAM_FIELD_MEMORY = 1u << 9,
    DT_CONTEXT_PARAM_FIELD_NAME = 1u << 10 /**< since 1.4 */
};

/**
 * Parameters of dt_context_create. Zero-initialise (`= {0}`) and set field_mask bits for
 * the fields you fill; a field whose bit is clear takes its value from the environment
 * (DISTTRAIN_RANK, DISTTRAIN_SIZE, ..., then Open MPI and Slurm variables) or its
 * default. Bits and fields are only ever appended: the library reads a field only when
 * its bit is set and the program was compiled against a header that has it (DT_API_MINOR
 * at least the field's "Since"), so a program built against an older header passes its
 * shorter struct as it is.
 */
typedef struct dt_context_params {
    uint64_t field_mask;
    int rank;               /**< this process's rank, 0 <= rank < size */
    int size;               /**< number of ranks in the job */
    int local_rank;         /**< rank among the processes on this host */
    int local_size;         /**< number of processes on this host */
    const char *store_addr; /**< "host:port" of the rendezvous store */
    const char *job_token;  /**< secret shared by all ranks of the job */
    const char *transport;  /**< ordered list of transports, e.g. "ucx,tcp" or "auto" */
    int timeout_ms;         /**< deadline of every blocking step; <= 0 means no limit */
    /** 1: every rank submits the same operations in the same order (as MPI and NCCL
     *  require). The engine then skips negotiation and runs each operation as soon as it
     *  is submitted (a blocking call on the caller's thread when nothing is queued): the
     *  lowest latency, but no fusion. Each call still carries a check of its kind,
     *  count, dtype, op, root, group and name hash: a rank that disagrees or skips a call
     *  makes it fail with DT_ERR_MISMATCH on every rank. The context and its groups
     *  (dt_group_create) share one queue: each process submits its calls on all of them
     *  in one order consistent across the ranks (in practice from one thread); calls on
     *  overlapping groups in different orders wait for each other until the timeout.
     *  Env DISTTRAIN_ORDERED. */
    int ordered;
    /** The memory provider plugin (libdt-memory-<name>.so) that knows device buffers,
     *  e.g. "cuda", or "none" for host memory only. Env DISTTRAIN_MEMORY. Since 1.1. */
    const char *memory;
    /** How the ranks pair this context up (see dt_context_create): the same name on every
     *  rank, and another for each live context of the job; 1 to 128 letters, digits, '.',
     *  '_' or '-' (it becomes part of the rendezvous store's keys). A name may be used
     *  again once its context is destroyed on every rank. Since 1.4. */
    const char *name;
} dt_context_params_t;

/** The exported constructor; call dt_context_create, which passes the header version. */
DT_API dt_status_t dt_context_create_versioned(int api_major, int api_minor,
                                               const dt_context_params_t *params,
                                               dt_context_h *out);

/**
 * Creates a context: discovers rank and size, connects to the rendezvous store, proves
 * it holds the job token, loads the transport plugin and connects to every peer.
 * Collective: every rank of the job must call it. Blocks until all ranks are connected
 * or the timeout (DISTTRAIN_TIMEOUT, default 300 s) passes. params may be NULL (all from
 * the environment). The caller owns *out and frees it with dt_context_destroy.
 * A new process joining a running elastic job (a launcher's replacement) blocks until the
 * job lets it in (dt_context_reform), then connects as the others do, meeting again with
 * them when a member dies meanwhile.
 * A process may create several contexts; each rank's contexts pair up with the other
 * ranks' ones as follows. A named context (params->name) pairs with the context of that
 * name on every rank, whatever the order and the thread the ranks create it in. Unnamed
 * contexts pair up by creation order, as MPI_Comm_dup and torch's new_group do: the n-th
 * unnamed context a rank creates is the n-th of every other rank, so every rank creates
 * them in the same order (a context of one process alone, size 1 and not elastic, meets
 * nobody and is not counted). Thread safe, but an unnamed context whose creation starts
 * while another thread of the process is creating one fails with DT_ERR_INVALID_STATE,
 * and so does the one under way (which of them the other ranks created first is chance):
 * contexts created from several threads at once need a name each. The mpi transport
 * pairs its communicators (MPI_Comm_dup) in MPI's own call order: with it, every rank
 * creates its contexts in the same order, one at a time, named or not.
 * Errors: DT_ERR_VERSION, DT_ERR_INVALID_CONFIG (a bad variable or param, named in the
 * message; a malformed name, or one a live context of this process has),
 * DT_ERR_INVALID_STATE (an unnamed context created while another is), DT_ERR_PLUGIN_NOT_FOUND
 * (message lists the folders searched), DT_ERR_CONNECT, DT_ERR_AUTH, DT_ERR_TIMEOUT; for a
 * joining process, DT_ERR_PEER_LOST when members kept dying while it connected.
 * A transport named alone (DISTTRAIN_TRANSPORT=tcp) fails with its own status. When none
 * of several candidates starts (a list, or those "auto" found), the message gives each
 * one's reason and the status is: the first usage error among them (DT_ERR_INVALID_CONFIG
 * for a bad variable or param, such as a plugin's DISTTRAIN_TCP_*: fixing it comes first,
 * whatever else failed); else the status of the first that was loaded but did not
 * start (DT_ERR_CONNECT, DT_ERR_TIMEOUT, DT_ERR_STORE, ...); DT_ERR_PLUGIN_NOT_FOUND only
 * when none could be found, loaded or negotiated.
 */
static inline dt_status_t dt_context_create(const dt_context_params_t *params,
                                            dt_context_h *out)
{
    return dt_context_create_versioned(DT_API_MAJOR, DT_API_MINOR, params, out);
}

/**
 * Destroys a context: waits for its queued operations (up to the timeout), stops the
 * engine, closes connections and frees memory. Accepts NULL. Requests created on the
 * context must be freed before. Not collective, but peers see the connection close.
 *
 * fork(): a context (and each group and request made from it) belongs to the process
 * that created it. A child of fork() inherits a copy, but not the engine thread, and its
 * copies of the connections and shared memory are the parent's. In the child,
 * dt_context_destroy and dt_request_free on such a copy return DT_OK and release
 * nothing (no departure notice, no shutdown of a socket, no unlinking of shared memory,
 * no joined thread: the parent's job goes on; the copied memory is left to the child's
 * exit); every other call on it fails with DT_ERR_INVALID_STATE naming the owning process.
 * A forked child that needs collectives creates a context of its own.
 */
DT_API dt_status_t dt_context_destroy(dt_context_h ctx);

/**
 * Tears the context down on purpose: every pending and later operation on it fails with
 * DT_ERR_ABORTED, and peers see this rank leave. The context must still be destroyed.
 * On a group, it aborts the whole job context and all its groups on this rank: they
 * share one engine.
 * Thread safe; never blocks for long. A pending operation on device memory that a device
 * transport (NCCL) has already queued on the GPU fails once the GPU is past it, work
 * queued ahead of it included, so that nothing writes to its buffers after it failed.
 */
DT_API dt_status_t dt_context_abort(dt_context_h ctx);

/**
 * DT_OK while the context works; otherwise the error that broke it (a lost peer, a
 * time-out, an abort), with its message in dt_last_error(). Once broken, every pending
 * and later operation fails with that error; destroy the context. Thread safe.
 */
DT_API dt_status_t dt_context_status(dt_context_h ctx);

/**
 * Creates a group (process set): a context over some ranks of parent, sharing its
 * connections. Collective over parent: every rank of parent calls it, in the same order
 * relative to other group creations on that parent, with the same list of nranks parent
 * ranks; a group may be the parent of further groups, which ranks outside it never see. On a
 * member, *out is the group's context, whose rank is the position in `ranks`; on other
 * ranks *out is NULL. Blocks until every rank of parent has called it. The parent must
 * outlive the group; destroy the group with dt_context_destroy. A group runs on its job
 * context's engine: every rank, member or not, keeps its job context until the group's
 * work is done on every rank (a rank that leaves the job fails the others' later calls,
 * on every group, with DT_ERR_PEER_LOST). Errors:
 * DT_ERR_INVALID_ARGUMENT (bad or repeated rank, NULL ranks or out), DT_ERR_MISMATCH
 * (ranks passed different lists). A rank that refuses its arguments still meets the
 * others before it returns, so they fail at once with DT_ERR_MISMATCH rather than wait
 * for it until the timeout.
 */
DT_API dt_status_t dt_group_create(dt_context_h parent, const int *ranks, int nranks,
                                   dt_context_h *out);

/**
 * For uneven inputs: this rank has no more data. Blocks until every rank has joined.
 * Meanwhile the other ranks' allreduces go on, this rank contributing the identity of
 * the operator (0 for sum; DT_AVG divides by the ranks that have not joined); other
 * collectives fail with DT_ERR_INVALID_STATE while a rank is joined. Writes the rank
 * that joined last to *last_joined_rank (may be NULL). Whole-job contexts only.
 */
DT_API dt_status_t dt_join(dt_context_h ctx, int *last_joined_rank);

/**
 * Elastic jobs (DISTTRAIN_ELASTIC=1, as `disttrainrun --elastic` sets): after an operation
 * failed with DT_ERR_PEER_LOST, or when dt_context_poll_joiners says new ranks wait,
 * re-forms the job among the ranks still alive and the new ones. Every surviving rank
 * calls it; they meet in the rendezvous store (which must outlive every rank: disttrainrun
 * serves it), are renumbered densely in their old order (rank 0 stays rank 0 if it lives),
 * new ranks after them, and connect afresh. On return ctx has its new rank, size and local
 * rank; its groups are gone (their operations fail with DT_ERR_INVALID_STATE: create them
 * again). Requests of the old membership must have been freed, and no other thread may use
 * ctx meanwhile. Membership closes once every rank not known dead (by the launcher's death
 * notices where it publishes them, else by the survivors' lost connections) and every
 * waiting new rank have arrived, or DISTTRAIN_ELASTIC_SETTLE_MS (default 1000) after the
 * last arrival when a rank is neither; where the launcher publishes deaths, a rank that no
 * survivor saw lost is alive, only late, and is waited for up to DISTTRAIN_TIMEOUT, then
 * left out. Errors: DT_ERR_INVALID_STATE when the job is not
 * elastic or this rank arrived after the job re-formed without it; DT_ERR_TIMEOUT when
 * fewer than DISTTRAIN_MIN_SIZE ranks arrived within DISTTRAIN_TIMEOUT;
 * DT_ERR_INVALID_ARGUMENT for a group's context; then the errors of dt_context_create.
 * Since 1.2.
 */
DT_API dt_status_t dt_context_reform(dt_context_h ctx);

/**
 * Elastic jobs: how many new processes wait to join (a launcher's replacements, started
 * by `disttrainrun --elastic --max-restarts N`, whose dt_context_create blocks until the
 * job lets them in). Collective over the whole job: every rank calls it at the same step
 * boundary (where the program commits its state) and gets rank 0's count in *waiting;
 * when it is above 0, every rank then calls dt_context_reform, which lets them in. 0 in a
 * job that is not elastic. Errors: DT_ERR_INVALID_ARGUMENT for a group's context or a
 * NULL waiting; then those of dt_broadcast. Since 1.2.
 */
DT_API dt_status_t dt_context_poll_joiners(dt_context_h ctx, int *waiting);

/** Rank of this process in the context. Thread safe. */
DT_API dt_status_t dt_context_rank(dt_context_h ctx, int *rank);
/** Number of ranks in the context. Thread safe. */
DT_API dt_status_t dt_context_size(dt_context_h ctx, int *size);
/** Rank of this process among the ranks on the same host. Thread safe. */
DT_API dt_status_t dt_context_local_rank(dt_context_h ctx, int *local_rank);
/** Number of ranks of the context on this host. Thread safe. */
DT_API dt_status_t dt_context_local_size(dt_context_h ctx, int *local_size);
/** Name of the transport plugin in use ("tcp"); valid while ctx lives. Thread safe. */
DT_API dt_status_t dt_context_transport(dt_context_h ctx, const char **name);

/* ------------------------------------------------------------------------------------ */
/* Requests                                                                               */
/* ------------------------------------------------------------------------------------ */

/** An asynchronous operation in flight. Its buffers must stay valid until it completes. */
typedef struct dt_request *dt_request_h;

/**
 * Tests a request without blocking: *done is 1 when it has completed. Returns the
 * operation's status once done (DT_OK or its error), DT_OK while it is in flight.
 * Thread safe.
 */
DT_API dt_status_t dt_request_test(dt_request_h req, int *done);

/**
 * Waits for a request up to timeout_ms milliseconds (negative: without limit, bounded
 * only by the context's DISTTRAIN_TIMEOUT). Returns the operation's status, or
 * DT_ERR_TIMEOUT if it had not completed in time (the request stays valid and can be
 * waited again). Thread safe.
 */
DT_API dt_status_t dt_request_wait(dt_request_h req, int timeout_ms);

/**
 * Frees a request. A request that has not completed is waited for first, so buffers are
 * never written after this returns. Accepts NULL.
 */
DT_API dt_status_t dt_request_free(dt_request_h req);

/* ------------------------------------------------------------------------------------ */
/* Collectives                                                                            */
/*                                                                                        */
/* Every collective comes blocking and asynchronous (the _async form returns a request at */
/* once). All ranks of the context call the same collectives in the same order with the  */
/* same count, dtype, op and root. `name` identifies the operation in errors and the      */
/* timeline; it may be NULL (a name is generated). The library copies the name. A         */
/* generated name counts the context's unnamed calls in the order they reach the library, */
/* which differs between ranks when several threads call at once: such threads must name  */
/* their calls (alike on every rank), or a call can pair with another thread's call on    */
/* other ranks and exchange its data without an error. The library warns once per context */
/* when unnamed calls come from a second thread.                                          */
/* Counts are in elements. A count that looks like a negative number cast to size_t is  */
/* refused with DT_ERR_INVALID_ARGUMENT. Thread safe: operations from several threads   */
/* are queued in the order the calls enter the library.                                  */
/* ------------------------------------------------------------------------------------ */

/**
 * Reduces count elements of sendbuf across all ranks with op and writes the result to
 * recvbuf on every rank. In place when sendbuf == recvbuf. Other overlap is refused.
 */
DT_API dt_status_t dt_allreduce(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, size_t count, dt_dtype_t dtype,
                                dt_reduce_op_t op);
DT_API dt_status_t dt_allreduce_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf, size_t count,
                                      dt_dtype_t dtype, dt_reduce_op_t op,
                                      dt_request_h *req);

/** Copies count elements of buf on root to buf on every other rank. */
DT_API dt_status_t dt_broadcast(dt_context_h ctx, const char *name, void *buf,
                                size_t count, dt_dtype_t dtype, int root);
DT_API dt_status_t dt_broadcast_async(dt_context_h ctx, const char *name, void *buf,
                                      size_t count, dt_dtype_t dtype, int root,
                                      dt_request_h *req);

/**
 * Gathers sendcount elements from every rank into recvbuf (size * sendcount elements,
 * rank r's block at offset r * sendcount) on every rank. In place when sendbuf equals
 * recvbuf + rank * sendcount elements.
 */
DT_API dt_status_t dt_allgather(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, size_t sendcount, dt_dtype_t dtype);
DT_API dt_status_t dt_allgather_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf,
                                      size_t sendcount, dt_dtype_t dtype,
                                      dt_request_h *req);

/**
 * Reduces size * recvcount elements of sendbuf across ranks with op; rank r receives
 * block r (recvcount elements) of the result in recvbuf.
 */
DT_API dt_status_t dt_reduce_scatter(dt_context_h ctx, const char *name,
                                     const void *sendbuf, void *recvbuf, size_t recvcount,
                                     dt_dtype_t dtype, dt_reduce_op_t op);
DT_API dt_status_t dt_reduce_scatter_async(dt_context_h ctx, const char *name,
                                           const void *sendbuf, void *recvbuf,
                                           size_t recvcount, dt_dtype_t dtype,
                                           dt_reduce_op_t op, dt_request_h *req);

/**
 * Every rank sends block j (count elements) of sendbuf to rank j, which stores it as
 * block i of its recvbuf, i being the sender. sendbuf and recvbuf hold size * count
 * elements each and must not overlap.
 */
DT_API dt_status_t dt_alltoall(dt_context_h ctx, const char *name, const void *sendbuf,
                               void *recvbuf, size_t count, dt_dtype_t dtype);
DT_API dt_status_t dt_alltoall_async(dt_context_h ctx, const char *name,
                                     const void *sendbuf, void *recvbuf, size_t count,
                                     dt_dtype_t dtype, dt_request_h *req);

/** Returns on each rank once every rank has entered the barrier. */
DT_API dt_status_t dt_barrier(dt_context_h ctx, const char *name);
DT_API dt_status_t dt_barrier_async(dt_context_h ctx, const char *name,
                                    dt_request_h *req);

/* ------------------------------------------------------------------------------------ */
/* Per-call parameters: where the buffers live (API 1.1)                                 */
/*                                                                                        */
/* Every collective has an _ex form (blocking and asynchronous) that takes one more      */
/* argument, a dt_op_params_t, before the request. The forms without _ex are unchanged   */
/* and mean host memory. One _ex entry point per collective, rather than one generic    */
/* call, keeps each collective's arguments typed; since dt_op_params_t grows by          */
/* field_mask bits, later per-call options need no further entry points.                 */
/* ------------------------------------------------------------------------------------ */

/** Where a collective's buffers live. */
typedef enum dt_memory_type {
    DT_MEMORY_HOST = 0,   /**< memory the CPU can read and write: the default */
    DT_MEMORY_DEVICE = 1, /**< accelerator memory (e.g. from cudaMalloc); needs a memory
                               provider (DISTTRAIN_MEMORY=cuda, or
                               dt_context_params_t.memory); without one the call fails
                               with DT_ERR_UNSUPPORTED. Transports that cannot take it
                               get it staged through pinned host memory */
    DT_MEMORY_AUTO = 2,   /**< ask the loaded memory providers about the pointers; host
                               when none is loaded. The library never loads CUDA itself
                               to classify a pointer. */
    DT_MEMORY_TYPE_COUNT_ = 3 /**< number of memory types; not a memory type */
} dt_memory_type_t;

/** Constant name of the memory type ("host", "device", "auto"), or "unknown". Thread
 *  safe. */
DT_API const char *dt_memory_type_name(dt_memory_type_t memory_type);

/** Bits of dt_op_params_t.field_mask: which fields the caller set. */
enum dt_op_param_field {
    DT_OP_PARAM_FIELD_MEMORY_TYPE = 1u << 0,
    DT_OP_PARAM_FIELD_DEVICE = 1u << 1,
    DT_OP_PARAM_FIELD_STREAM = 1u << 2
};

/**
 * Parameters of one collective call. Zero-initialise (`= {0}`) and set field_mask bits
 * for the fields you fill; a field whose bit is clear takes its default. A NULL params
 * pointer means all defaults, which is what the forms without _ex do. Bits are only ever
 * appended. The library reads the struct during the call and keeps no pointer to it.
 *
 * The memory type is part of what ranks must agree on, like dtype and count: host on one
 * rank and device on another fails the operation with DT_ERR_MISMATCH on every rank, and
 * operations of different memory types are never fused.
 */
typedef struct dt_op_params {
    uint64_t field_mask;
    /** Where sendbuf and recvbuf live (both the same). Default DT_MEMORY_HOST. An
     *  unknown value is DT_ERR_INVALID_ARGUMENT. While a memory provider is loaded it is
     *  asked about each buffer, whatever this says: host memory called DT_MEMORY_DEVICE,
     *  or device memory (the cuda provider counts managed memory as device memory)
     *  called DT_MEMORY_HOST, is DT_ERR_INVALID_ARGUMENT at the call, naming the buffer;
     *  nothing is queued, so the context and the peers go on. */
    dt_memory_type_t memory_type;
    /** Device ordinal of device buffers (CUDA's device index), >= 0; a negative value
     *  is DT_ERR_INVALID_ARGUMENT. Default: the device the memory provider finds the
     *  buffers on. Ignored for host memory. A check, not a choice: the library moves
     *  the buffers where they are. An ordinal other than the one the memory provider
     *  finds the buffers on (one that does not exist included) is
     *  DT_ERR_INVALID_ARGUMENT at the call, as are buffers it finds on two devices. It
     *  is not compared with the device the context works on (DISTTRAIN_DEVICE), which
     *  the library cannot ask the plugins for. */
    int device;
    /** The producer's stream (e.g. a cudaStream_t), opaque to the library: the
     *  collective starts after the work queued on it so far. Default NULL, the device's
     *  default stream. Ignored for host memory. A blocking call may run the collective
     *  on this stream itself (the nccl transport does, as PyTorch does for
     *  async_op=False): it has ended when the call returns either way, but it shows on
     *  the stream in a profile, and work another thread queues on the stream during the
     *  call waits for it. */
    void *stream;
} dt_op_params_t;

/**
 * dt_allreduce and dt_allreduce_async with per-call parameters (params may be NULL:
 * host memory). Besides the errors of the forms without _ex: DT_ERR_INVALID_ARGUMENT
 * for a bad params field (named in the message) or a memory type the memory provider
 * finds a buffer contradicts; DT_ERR_UNSUPPORTED, at once, for device memory while no
 * memory provider is loaded.
 */
DT_API dt_status_t dt_allreduce_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t count, dt_dtype_t dtype,
                                   dt_reduce_op_t op, const dt_op_params_t *params);
DT_API dt_status_t dt_allreduce_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf, size_t count,
                                         dt_dtype_t dtype, dt_reduce_op_t op,
                                         const dt_op_params_t *params, dt_request_h *req);

/** dt_broadcast[_async] with per-call parameters; errors as dt_allreduce_ex. */
DT_API dt_status_t dt_broadcast_ex(dt_context_h ctx, const char *name, void *buf,
                                   size_t count, dt_dtype_t dtype, int root,
                                   const dt_op_params_t *params);
DT_API dt_status_t dt_broadcast_async_ex(dt_context_h ctx, const char *name, void *buf,
                                         size_t count, dt_dtype_t dtype, int root,
                                         const dt_op_params_t *params, dt_request_h *req);

/** dt_allgather[_async] with per-call parameters; errors as dt_allreduce_ex. */
DT_API dt_status_t dt_allgather_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, size_t sendcount, dt_dtype_t dtype,
                                   const dt_op_params_t *params);
DT_API dt_status_t dt_allgather_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf,
                                         size_t sendcount, dt_dtype_t dtype,
                                         const dt_op_params_t *params, dt_request_h *req);

/** dt_reduce_scatter[_async] with per-call parameters; errors as dt_allreduce_ex. */
DT_API dt_status_t dt_reduce_scatter_ex(dt_context_h ctx, const char *name,
                                        const void *sendbuf, void *recvbuf,
                                        size_t recvcount, dt_dtype_t dtype,
                                        dt_reduce_op_t op, const dt_op_params_t *params);
DT_API dt_status_t dt_reduce_scatter_async_ex(dt_context_h ctx, const char *name,
                                              const void *sendbuf, void *recvbuf,
                                              size_t recvcount, dt_dtype_t dtype,
                                              dt_reduce_op_t op,
                                              const dt_op_params_t *params,
                                              dt_request_h *req);

/** dt_alltoall[_async] with per-call parameters; errors as dt_allreduce_ex. */
DT_API dt_status_t dt_alltoall_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                  void *recvbuf, size_t count, dt_dtype_t dtype,
                                  const dt_op_params_t *params);
DT_API dt_status_t dt_alltoall_async_ex(dt_context_h ctx, const char *name,
                                        const void *sendbuf, void *recvbuf, size_t count,
                                        dt_dtype_t dtype, const dt_op_params_t *params,
                                        dt_request_h *req);

/** dt_barrier[_async] with per-call parameters. A barrier moves no buffer: the fields
 *  are checked (DT_ERR_INVALID_ARGUMENT) but do not change what it does. */
DT_API dt_status_t dt_barrier_ex(dt_context_h ctx, const char *name,
                                 const dt_op_params_t *params);
DT_API dt_status_t dt_barrier_async_ex(dt_context_h ctx, const char *name,
                                       const dt_op_params_t *params, dt_request_h *req);

/* ------------------------------------------------------------------------------------ */
/* Uneven blocks: allgatherv and alltoallv (API 1.2)                                     */
/*                                                                                        */
/* As MPI_Allgatherv and MPI_Alltoallv without displacements: the blocks are packed in  */
/* rank order, rank r's block starting after the blocks of ranks 0 .. r-1. Counts are   */
/* in elements, one per rank of the context; the library copies the count arrays during */
/* the call, so they need not outlive it. Before the data moves, the ranks exchange      */
/* their counts (a few small messages): ranks that disagree fail the call with           */
/* DT_ERR_MISMATCH on every rank, with a message naming the ranks and counts, and the   */
/* context stays usable. No transport runs these natively; they are never fused.        */
/* ------------------------------------------------------------------------------------ */

/**
 * Gathers sendcount elements from every rank into recvbuf on every rank: rank r's
 * recvcounts[r] elements at offset recvcounts[0] + ... + recvcounts[r-1]. recvcounts has
 * one count per rank, the same on every rank, and recvcounts[rank] must equal sendcount.
 * recvbuf holds the sum of recvcounts. In place when sendbuf is this rank's block of
 * recvbuf; other overlap is refused. Since 1.2.
 * Errors: DT_ERR_INVALID_ARGUMENT (NULL recvcounts, recvcounts[rank] != sendcount, a
 * count or sum too large, NULL or overlapping buffers), DT_ERR_MISMATCH (ranks passed
 * different recvcounts).
 */
DT_API dt_status_t dt_allgatherv(dt_context_h ctx, const char *name, const void *sendbuf,
                                 void *recvbuf, size_t sendcount, const size_t *recvcounts,
                                 dt_dtype_t dtype);
DT_API dt_status_t dt_allgatherv_async(dt_context_h ctx, const char *name,
                                       const void *sendbuf, void *recvbuf, size_t sendcount,
                                       const size_t *recvcounts, dt_dtype_t dtype,
                                       dt_request_h *req);
/** dt_allgatherv[_async] with per-call parameters; errors as dt_allreduce_ex. Device
 *  memory is staged through the memory provider's pinned host buffers. Since 1.2. */
DT_API dt_status_t dt_allgatherv_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                    void *recvbuf, size_t sendcount,
                                    const size_t *recvcounts, dt_dtype_t dtype,
                                    const dt_op_params_t *params);
DT_API dt_status_t dt_allgatherv_async_ex(dt_context_h ctx, const char *name,
                                          const void *sendbuf, void *recvbuf,
                                          size_t sendcount, const size_t *recvcounts,
                                          dt_dtype_t dtype, const dt_op_params_t *params,
                                          dt_request_h *req);

/**
 * Every rank sends sendcounts[j] elements to rank j, which stores them as block i of its
 * recvbuf (recvcounts[i] elements), i being the sender. sendbuf holds the sum of
 * sendcounts, recvbuf the sum of recvcounts, blocks packed in rank order; they must not
 * overlap. Rank i's sendcounts[j] must equal rank j's recvcounts[i]. Since 1.2.
 * Errors: DT_ERR_INVALID_ARGUMENT (NULL counts, a count or sum too large, NULL or
 * overlapping buffers), DT_ERR_MISMATCH (a pair of ranks disagrees on its count).
 */
DT_API dt_status_t dt_alltoallv(dt_context_h ctx, const char *name, const void *sendbuf,
                                void *recvbuf, const size_t *sendcounts,
                                const size_t *recvcounts, dt_dtype_t dtype);
DT_API dt_status_t dt_alltoallv_async(dt_context_h ctx, const char *name,
                                      const void *sendbuf, void *recvbuf,
                                      const size_t *sendcounts, const size_t *recvcounts,
                                      dt_dtype_t dtype, dt_request_h *req);
/** dt_alltoallv[_async] with per-call parameters; errors as dt_allreduce_ex. Device
 *  memory is staged through the memory provider's pinned host buffers. Since 1.2. */
DT_API dt_status_t dt_alltoallv_ex(dt_context_h ctx, const char *name, const void *sendbuf,
                                   void *recvbuf, const size_t *sendcounts,
                                   const size_t *recvcounts, dt_dtype_t dtype,
                                   const dt_op_params_t *params);
DT_API dt_status_t dt_alltoallv_async_ex(dt_context_h ctx, const char *name,
                                         const void *sendbuf, void *recvbuf,
                                         const size_t *sendcounts, const size_t *recvcounts,
                                         dt_dtype_t dtype, const dt_op_params_t *params,
                                         dt_request_h *req);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_DISTTRAIN_H */

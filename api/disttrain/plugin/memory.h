/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain memory-provider plugin ABI.
 *
 * A memory provider (libdt-memory-<name>.so, chosen with DISTTRAIN_MEMORY) gives the core
 * the memory services of one accelerator runtime without the core ever linking it: where
 * a pointer lives, device and pinned host allocation, asynchronous copies on a stream, and
 * events the core can poll. It is negotiated through DT_PLUGIN_ENTRY with kind
 * DT_PLUGIN_KIND_MEMORY and answers a const dt_memory_v1_t. (Open MPI's accelerator
 * framework, opal/mca/accelerator, has the same split.)
 *
 * Nothing in the table waits for device work: there is no synchronize. The core polls
 * event_query against each operation's deadline, so a stuck device becomes a time-out in
 * the core, never a hang inside a plugin.
 *
 * Threading: every member is safe to call from any thread at the same time, on one
 * instance; the core classifies pointers on the caller's thread while its engine thread
 * copies. Handles (streams, events) are used by one thread at a time.
 *
 * Every member returns a DTP_ status and explains a failure through services->set_error.
 * A NULL member means "not supported"; init, finalize and pointer_query are required.
 * Ops tables are frozen once released; later versions append members.
 */
#ifndef DISTTRAIN_PLUGIN_MEMORY_H
#define DISTTRAIN_PLUGIN_MEMORY_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DT_MEMORY_VERSION_1 1u
/** The newest memory ops version this header describes. */
#define DT_MEMORY_VERSION DT_MEMORY_VERSION_1

/** Where a pointer lives: the values of DT_MEMORY_HOST and DT_MEMORY_DEVICE. */
#define DTP_MEMORY_HOST 0
#define DTP_MEMORY_DEVICE 1

/** Directions of copy_async. */
#define DTP_MEMORY_COPY_HOST_TO_DEVICE 0
#define DTP_MEMORY_COPY_DEVICE_TO_HOST 1
#define DTP_MEMORY_COPY_DEVICE_TO_DEVICE 2

/** Arguments of init (core to plugin). */
typedef struct dt_memory_init_args {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_MEMORY_VERSION of the core */
    int32_t local_rank;   /**< this process's rank on its host, to pick a default device */
    int32_t local_size;   /**< processes of the job on this host */
    void *host;           /**< pass to every services function */
    const dt_host_services_t *services;
} dt_memory_init_args_t;

/** Where a pointer lives (plugin fills the core's struct; write only within struct_size). */
typedef struct dt_memory_pointer_info {
    uint32_t struct_size; /**< set by the core */
    uint32_t abi_version; /**< set by the core */
    int32_t memory_type;  /**< DTP_MEMORY_HOST or DTP_MEMORY_DEVICE */
    int32_t device;       /**< the device's ordinal when device memory, else -1 */
} dt_memory_pointer_info_t;

/**
 * Version 1 (current). `m` is the instance from init.
 *
 * init           opens the runtime and writes the instance to *m. A provider that cannot
 *                run here (no device, no driver) returns DTP_ERR_UNSUPPORTED with
 *                set_error's message. May block (driver start-up); called once.
 * finalize       releases the instance and everything it still owns (streams, events,
 *                allocations the core did not free). Called once, after every other
 *                call on m has returned.
 * pointer_query  writes where ptr lives to *info. A pointer the provider did not allocate
 *                and its runtime does not know is host memory (DTP_OK). Never blocks and
 *                never waits for device work: the core asks inside every collective call.
 * device_alloc   writes bytes of device memory on device (an ordinal, or < 0 for the
 *                instance's default) to *ptr. The core owns the memory until device_free.
 *                May block in the allocator; never waits for queued device work.
 * device_free    frees what device_alloc returned. The core calls it only once no queued
 *                copy uses ptr (it has seen their events complete).
 * host_alloc     writes bytes of pinned (page-locked) host memory, which the CPU may read
 *                and write and copies reach fastest, to *ptr; owned by the core until
 *                host_free. May block in the allocator.
 * host_free      frees what host_alloc returned, on the same terms as device_free.
 * stream_create  writes a new in-order queue of device work on device (< 0: default) to
 *                *stream; owned by the core until stream_destroy.
 * stream_destroy destroys a stream the core created. Work still queued on it finishes;
 *                the call does not wait for it.
 * copy_async     queues a copy of bytes from src to dst in direction (DTP_MEMORY_COPY_*)
 *                on stream, after everything queued on it before, and returns at once.
 *                Both buffers must stay valid and untouched until an event recorded after
 *                the copy completes. stream is one from stream_create, a stream of the
 *                same runtime that the user handed the core (dt_op_params_t.stream), or
 *                NULL for the runtime's default stream (also in event_record).
 * event_create   writes a new event to *event; owned by the core until event_destroy. A
 *                new event counts as complete.
 * event_destroy  destroys an event; it may still be pending.
 * event_record   marks event to complete once the work queued on stream so far has run.
 *                Returns at once.
 * event_query    DTP_OK when the event has completed, DTP_INPROGRESS while it has not,
 *                an error when the device failed. Never blocks: the core polls it.
 *
 * Appended (a table whose struct_size ends before a member lacks it, as if NULL):
 * stream_wait_event  makes work queued on stream after this call wait until the event's
 *                newest record (at the time of this call) completes. Returns at once.
 *                The core records an event on the producer's stream when a collective is
 *                called and makes its own stream wait for it, so its copies start as soon
 *                as the producer's work up to the call has run, not after later work.
 */
typedef struct dt_memory_v1 {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_MEMORY_VERSION_1 */
    const char *name;
    int32_t (*init)(const dt_memory_init_args_t *args, void **m);
    int32_t (*finalize)(void *m);
    int32_t (*pointer_query)(void *m, const void *ptr, dt_memory_pointer_info_t *info);
    int32_t (*device_alloc)(void *m, int32_t device, size_t bytes, void **ptr);
    int32_t (*device_free)(void *m, void *ptr);
    int32_t (*host_alloc)(void *m, size_t bytes, void **ptr);
    int32_t (*host_free)(void *m, void *ptr);
    int32_t (*stream_create)(void *m, int32_t device, void **stream);
    int32_t (*stream_destroy)(void *m, void *stream);
    int32_t (*copy_async)(void *m, void *dst, const void *src, size_t bytes,
                          int32_t direction, void *stream);
    int32_t (*event_create)(void *m, void **event);
    int32_t (*event_destroy)(void *m, void *event);
    int32_t (*event_record)(void *m, void *event, void *stream);
    int32_t (*event_query)(void *m, void *event);
    int32_t (*stream_wait_event)(void *m, void *stream, void *event);
} dt_memory_v1_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_PLUGIN_MEMORY_H */

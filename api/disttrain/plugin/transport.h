/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain transport plugin ABI.
 *
 * A transport moves bytes between ranks: asynchronous tagged point-to-point sends and
 * receives, driven by progress(). It may also offer native collectives; a NULL member
 * means "not supported" and the core runs its own algorithms over send/receive instead.
 *
 * A released ops table never changes or loses a member. The newest one grows only by
 * optional members appended at its end: the core copies min(struct_size, its sizeof) of
 * a plugin's table into a zeroed one, so an older plugin's shorter table reads them as
 * NULL ("not offered"). Anything else takes a new version; the core speaks the newest
 * and keeps an adapter for each older one (core/plugin/). A plugin answers negotiation
 * with the newest version it speaks that the offer allows.
 *
 * Threading: the core calls every op of one transport instance from one thread at a time
 * (its engine thread), so a plugin needs no locking of its own for its instance.
 */
#ifndef DISTTRAIN_PLUGIN_TRANSPORT_H
#define DISTTRAIN_PLUGIN_TRANSPORT_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DT_TRANSPORT_VERSION_1 1u
#define DT_TRANSPORT_VERSION_2 2u
#define DT_TRANSPORT_VERSION_3 3u
/** The newest transport ops version this header describes. */
#define DT_TRANSPORT_VERSION DT_TRANSPORT_VERSION_3

/** Memory a transport accepts (bits of dt_transport_caps_t's memory masks). Device
 *  memory is the memory of an accelerator that the host must not read or write. */
#define DT_TRANSPORT_MEMORY_HOST   (1u << 0)
#define DT_TRANSPORT_MEMORY_DEVICE (1u << 1)

/** dt_transport_caps_t flags. CONTROL: the transport can carry the engine's control
 *  traffic (negotiation of ready tensors, barriers, liveness), which is small messages in
 *  host memory between every pair of ranks. A transport without it (device-only, NCCL)
 *  must run beside one that has it. */
#define DT_TRANSPORT_CAP_CONTROL (1u << 0)

/**
 * A point-to-point or collective operation in flight, owned by the core. The plugin sets
 * status to DTP_INPROGRESS when it accepts the operation and to DTP_OK or an error when
 * it completes (from inside a transport call, usually progress). The core keeps the
 * struct alive and in place until status is no longer DTP_INPROGRESS.
 */
typedef struct dt_transport_request {
    int32_t status;    /**< DTP_INPROGRESS, then DTP_OK or a DTP_ERR_* */
    int32_t peer;      /**< receive: the rank that sent the message */
    size_t bytes;      /**< receive: bytes received; send: bytes sent */
    void *plugin[4];   /**< plugin's scratch space, untouched by the core */
} dt_transport_request_t;

/** Arguments of init (core to plugin). */
typedef struct dt_transport_init_args {
    uint32_t struct_size;
    uint32_t abi_version;   /**< DT_TRANSPORT_VERSION of the core */
    int32_t rank;
    int32_t size;
    int32_t local_rank;
    int32_t local_size;
    int32_t timeout_ms;     /**< deadline for init's connection set-up; <= 0: none */
    int32_t reserved;
    void *host;             /**< pass to every services function */
    const dt_host_services_t *services;
} dt_transport_init_args_t;

/**
 * Version 1 (frozen): point-to-point only.
 *
 * init      connects this rank to every peer (through the store) and writes the plugin's
 *           instance to *transport. Collective; blocks up to args->timeout_ms.
 * finalize  closes connections and frees the instance; pending requests are failed with
 *           DTP_ERR_ABORTED first.
 * isend     starts sending len bytes of buf to peer with tag. buf must stay valid until
 *           req completes. Messages between a pair with the same tag arrive in order.
 * irecv     starts receiving a message with tag from peer into buf (capacity len). A
 *           larger message is an error on req (DTP_ERR_PROTOCOL), never an overflow.
 * progress  moves data and completes requests; waits up to timeout_ms (0: poll) for
 *           something to happen. Returns an error only for failures of the whole
 *           transport; a failed peer fails only the requests that involve it.
 */
typedef struct dt_transport_v1 {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_TRANSPORT_VERSION_1 */
    const char *name;
    int32_t (*init)(const dt_transport_init_args_t *args, void **transport);
    int32_t (*finalize)(void *transport);
    int32_t (*isend)(void *transport, int32_t peer, uint64_t tag, const void *buf,
                     size_t len, dt_transport_request_t *req);
    int32_t (*irecv)(void *transport, int32_t peer, uint64_t tag, void *buf, size_t len,
                     dt_transport_request_t *req);
    int32_t (*progress)(void *transport, int32_t timeout_ms);
} dt_transport_v1_t;

/**
 * What a transport accepts (plugin to core), filled by dt_transport_v3_t's query.
 * Grow-only: members are only ever appended, and each new member is defined so that
 * zero is what a plugin that does not know it means. The core zeroes the struct and sets
 * struct_size and abi_version; the plugin leaves those two as they are and writes only
 * the members after them that end within struct_size (a copy of min(struct_size, the
 * plugin's sizeof) bytes, header excluded).
 *
 * Which native collectives a transport runs stays the ops table's NULL-member rule, and
 * a dtype or reduction it cannot run is DTP_ERR_UNSUPPORTED for that one call; neither
 * is repeated here, so the table and this answer can never disagree.
 */
typedef struct dt_transport_caps {
    uint32_t struct_size;
    uint32_t abi_version;   /**< DT_TRANSPORT_VERSION of the core, which sets it */
    uint32_t p2p_memory;    /**< DT_TRANSPORT_MEMORY_* bits that isend/irecv accept */
    uint32_t native_memory; /**< DT_TRANSPORT_MEMORY_* bits the native collectives accept */
    uint32_t flags;         /**< DT_TRANSPORT_CAP_* bits */
    uint32_t reserved;      /**< zero */
} dt_transport_caps_t;

/**
 * Version 2 (frozen): version 1's members unchanged, then
 *
 * abort     fails every pending request with DTP_ERR_ABORTED and tells peers this rank
 *           leaves (closing connections is enough). NULL: the core calls finalize.
 * native collectives, each NULL when not supported: they start the operation and
 *           complete req like isend. dtype and op are DTP_* values; root is a rank.
 *           A plugin may return DTP_ERR_UNSUPPORTED for one call (a dtype it cannot
 *           reduce, say) and the core then runs its own algorithm for that call.
 */
typedef struct dt_transport_v2 {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_TRANSPORT_VERSION_2 */
    const char *name;
    int32_t (*init)(const dt_transport_init_args_t *args, void **transport);
    int32_t (*finalize)(void *transport);
    int32_t (*isend)(void *transport, int32_t peer, uint64_t tag, const void *buf,
                     size_t len, dt_transport_request_t *req);
    int32_t (*irecv)(void *transport, int32_t peer, uint64_t tag, void *buf, size_t len,
                     dt_transport_request_t *req);
    int32_t (*progress)(void *transport, int32_t timeout_ms);

    int32_t (*abort)(void *transport);

    int32_t (*allreduce)(void *transport, const void *sendbuf, void *recvbuf, size_t count,
                         int32_t dtype, int32_t op, dt_transport_request_t *req);
    int32_t (*broadcast)(void *transport, void *buf, size_t count, int32_t dtype,
                         int32_t root, dt_transport_request_t *req);
    int32_t (*allgather)(void *transport, const void *sendbuf, void *recvbuf,
                         size_t sendcount, int32_t dtype, dt_transport_request_t *req);
    int32_t (*reduce_scatter)(void *transport, const void *sendbuf, void *recvbuf,
                              size_t recvcount, int32_t dtype, int32_t op,
                              dt_transport_request_t *req);
    int32_t (*alltoall)(void *transport, const void *sendbuf, void *recvbuf, size_t count,
                        int32_t dtype, dt_transport_request_t *req);
    int32_t (*barrier)(void *transport, dt_transport_request_t *req);
} dt_transport_v2_t;

/**
 * Version 3 (current): version 2's members unchanged, then
 *
 * query     fills *caps with what this instance accepts (see dt_transport_caps_t). The
 *           core calls it once, after a successful init and before any other op, and
 *           never again: the answer must hold for the instance's whole life, so a
 *           plugin that probes devices does so in init. caps is owned by the core and
 *           valid only during the call. NULL: the core takes the answer of an older
 *           plugin (host memory only for point-to-point and native collectives, carries
 *           control traffic). A plugin whose p2p_memory lacks DT_TRANSPORT_MEMORY_HOST
 *           or that clears DT_TRANSPORT_CAP_CONTROL is never handed host control
 *           traffic, and is never used as the only transport; one that leaves a memory
 *           type out of a mask is never handed a pointer to that memory through the
 *           members the mask covers.
 *
 * Appended later (grow-only; an older plugin's shorter table reads as NULL):
 *
 * split       a communicator of a subset of this instance's ranks, for a group of the
 *             core's (dt_group_create): collective over every rank of the instance,
 *             each passing the same child_size for its color. Ranks passing the same
 *             color >= 0 form one child, in which key (0 to child_size - 1, distinct
 *             within a color) is the rank; a negative color takes part without joining
 *             one (*child = NULL). The child is a new instance of this same table, with
 *             its own rank and size, finalized by finalize; the parent outlives it and
 *             aborting the parent aborts it. DTP_ERR_UNSUPPORTED: no child can be made
 *             (the reason in set_error): the core runs the group's calls elsewhere.
 *             Bounded by timeout_ms.
 * batch_begin, batch_end
 *             bracket a batch of native collectives the core starts back to back (each
 *             with its own request, accepted with DTP_INPROGRESS): the plugin may hold
 *             them until batch_end and issue them together (NCCL: one
 *             ncclGroupStart/ncclGroupEnd). Every rank brackets the same calls. No
 *             other member is called between them; a batch_end with no batch_begin is
 *             DTP_ERR_INVALID_ARGUMENT.
 * wait_event  makes the device work of every native collective started after this call
 *             wait for `event` on the device: an event of the memory provider whose ops
 *             table is named `runtime` (dt_memory_v1_t.name, e.g. "cuda"), which the
 *             core recorded on the stream of the buffers' producer when the collective
 *             was called (api/disttrain/plugin/memory.h). The plugin queues the wait on
 *             its own device queue and returns at once; it never waits on the host. It
 *             captures the event's newest record at the time of the call (CUDA:
 *             cudaStreamWaitEvent on the plugin's stream), so the core may record the
 *             event again or destroy it as soon as the call returns. Collectives the
 *             plugin accepted earlier but has not yet put on the device may wait too
 *             (the wait is queued in order with them); the core calls it only while
 *             none is in flight on this instance, before the collective or before
 *             batch_begin for a batch. DTP_ERR_UNSUPPORTED: this plugin cannot wait for
 *             that runtime's events (the reason in set_error); nothing was queued and
 *             the core waits for the event on the host instead. The answer for one
 *             runtime holds for the instance's whole life, so the core may stop asking
 *             after a refusal. Any other error fails the collective it was for.
 *             Why an event and a runtime name rather than a stream: the core already
 *             records that event for every device call (staging's copies wait for it),
 *             an event names exactly the producer's work up to the call and not what
 *             the producer queues later, and the name lets a plugin refuse a provider
 *             whose handles are not its runtime's (a fake device's, say) instead of
 *             misreading them.
 * launch_on_stream
 *             runs the next native collective the core calls on `stream`, a stream of
 *             the memory provider whose ops table is named `runtime` (CUDA: a
 *             cudaStream_t; NULL is the runtime's default stream), instead of on the
 *             plugin's own device queue: the collective starts after all the work queued
 *             on stream before this call, and the plugin records its completion there.
 *             It applies to that one next collective call only, whether the plugin then
 *             accepts it or declines it; later collectives run on the plugin's own queue.
 *             Where the plugin cannot launch on that stream itself (a stream of another
 *             device than its communicator's, say), it makes its own queue wait for the
 *             stream's work instead and returns DTP_OK all the same. The core calls it
 *             only for a blocking call, right before the collective, while none is in
 *             flight on this instance and outside a batch, and then passes no ready event
 *             to wait_event for it. DTP_ERR_UNSUPPORTED: this plugin cannot use that
 *             runtime's streams (the reason in set_error); nothing changed, the answer
 *             holds for the instance's whole life, and the core orders the call with
 *             wait_event instead. Any other error fails the collective it was for.
 *             Why: the caller of a blocking call waits for the collective anyway, so
 *             running it on the producer's stream holds back no work of the caller's,
 *             and it saves recording an event on that stream and queueing a wait for it
 *             on the plugin's (PyTorch's ProcessGroupNCCL does the same for
 *             async_op=False since PyTorch 2.7).
 */
typedef struct dt_transport_v3 {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_TRANSPORT_VERSION_3 */
    const char *name;
    int32_t (*init)(const dt_transport_init_args_t *args, void **transport);
    int32_t (*finalize)(void *transport);
    int32_t (*isend)(void *transport, int32_t peer, uint64_t tag, const void *buf,
                     size_t len, dt_transport_request_t *req);
    int32_t (*irecv)(void *transport, int32_t peer, uint64_t tag, void *buf, size_t len,
                     dt_transport_request_t *req);
    int32_t (*progress)(void *transport, int32_t timeout_ms);

    int32_t (*abort)(void *transport);

    int32_t (*allreduce)(void *transport, const void *sendbuf, void *recvbuf, size_t count,
                         int32_t dtype, int32_t op, dt_transport_request_t *req);
    int32_t (*broadcast)(void *transport, void *buf, size_t count, int32_t dtype,
                         int32_t root, dt_transport_request_t *req);
    int32_t (*allgather)(void *transport, const void *sendbuf, void *recvbuf,
                         size_t sendcount, int32_t dtype, dt_transport_request_t *req);
    int32_t (*reduce_scatter)(void *transport, const void *sendbuf, void *recvbuf,
                              size_t recvcount, int32_t dtype, int32_t op,
                              dt_transport_request_t *req);
    int32_t (*alltoall)(void *transport, const void *sendbuf, void *recvbuf, size_t count,
                        int32_t dtype, dt_transport_request_t *req);
    int32_t (*barrier)(void *transport, dt_transport_request_t *req);

    int32_t (*query)(void *transport, dt_transport_caps_t *caps);

    /* Appended to version 3; the core reads them only when struct_size covers them, and
     * a NULL member (or a table too short to hold it) means "not offered". */
    int32_t (*split)(void *transport, int32_t color, int32_t key, int32_t child_size,
                     int32_t timeout_ms, void **child);
    int32_t (*batch_begin)(void *transport);
    int32_t (*batch_end)(void *transport);
    int32_t (*wait_event)(void *transport, const char *runtime, void *event);
    int32_t (*launch_on_stream)(void *transport, const char *runtime, void *stream);
} dt_transport_v3_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_PLUGIN_TRANSPORT_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdisttrain plugin ABI: what every plugin kind shares.
 *
 * A plugin includes only the headers in this folder and never links libdisttrain. It
 * exports exactly one symbol, DT_PLUGIN_ENTRY (dt_plugin_negotiate): the core offers the
 * highest ABI version it speaks and its services; the plugin answers with the version it
 * speaks, its kind, its name and a const ops table, or declines.
 *
 * Structs passed across this boundary start with struct_size and abi_version and grow
 * only at the end; a reader copies min(struct_size, sizeof) bytes.
 */
#ifndef DISTTRAIN_PLUGIN_COMMON_H
#define DISTTRAIN_PLUGIN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Name of the single symbol a plugin exports. */
#define DT_PLUGIN_ENTRY dt_plugin_negotiate
#define DT_PLUGIN_ENTRY_NAME "dt_plugin_negotiate"

/** Marks the entry point exported from a plugin built with hidden visibility. */
#define DT_PLUGIN_EXPORT __attribute__((visibility("default")))

/*
 * Status codes of plugin calls. They have the values of dt_status_t in disttrain.h
 * (the core checks this at compile time), so the core passes them through unchanged.
 */
#define DTP_OK 0
#define DTP_INPROGRESS 1
#define DTP_ERR_INVALID_ARGUMENT (-1)
#define DTP_ERR_INVALID_CONFIG (-2)
#define DTP_ERR_UNSUPPORTED (-4)
#define DTP_ERR_NO_MEMORY (-7)
#define DTP_ERR_TRANSPORT (-200)
#define DTP_ERR_CONNECT (-201)
#define DTP_ERR_PROTOCOL (-202)
#define DTP_ERR_AUTH (-203)
#define DTP_ERR_STORE (-204)
#define DTP_ERR_PEER_LOST (-300)
#define DTP_ERR_ABORTED (-301)
#define DTP_ERR_TIMEOUT (-400)
#define DTP_ERR_INTERNAL (-900)

/* Element types and reduction operators: the values of dt_dtype_t and dt_reduce_op_t. */
#define DTP_FLOAT32 0
#define DTP_FLOAT64 1
#define DTP_FLOAT16 2
#define DTP_BFLOAT16 3
#define DTP_INT8 4
#define DTP_UINT8 5
#define DTP_INT32 6
#define DTP_INT64 7

#define DTP_SUM 0
#define DTP_AVG 1
#define DTP_MIN 2
#define DTP_MAX 3
#define DTP_PROD 4

/** Plugin kinds. */
#define DT_PLUGIN_KIND_TRANSPORT 1u
#define DT_PLUGIN_KIND_COMPUTE 2u
#define DT_PLUGIN_KIND_MEMORY 3u

/** Log levels of dt_host_services_t.log. */
#define DT_LOG_ERROR 0
#define DT_LOG_WARN 1
#define DT_LOG_INFO 2
#define DT_LOG_DEBUG 3
#define DT_LOG_TRACE 4

/** Version of dt_host_services_t that this header describes. */
#define DT_HOST_SERVICES_VERSION 1u

/**
 * Services the core lends a plugin. `host` is the opaque per-context pointer the core
 * passes in the plugin's init arguments; log accepts NULL (no context yet). Every
 * function is thread safe. Functions returning int32_t return a DTP_ status.
 */
typedef struct dt_host_services {
    uint32_t struct_size;
    uint32_t abi_version; /**< DT_HOST_SERVICES_VERSION */

    /** Writes one log line at level (DT_LOG_*), prefixed with the rank and plugin name.
     *  Lines above DISTTRAIN_LOG_LEVEL are dropped. Never blocks for long. */
    void (*log)(void *host, int level, const char *plugin, const char *message);

    /** Records the message that explains the error the plugin is about to return, so the
     *  core can pass it to the user through dt_last_error(). */
    void (*set_error)(void *host, const char *message);

    /** Stores value under key in the job's rendezvous store (keys are private to this
     *  context and plugin). Blocks for one round trip. */
    int32_t (*store_set)(void *host, const char *key, const void *value, size_t len);

    /** Waits up to timeout_ms (< 0: the context's timeout; 0: looks once) for key to
     *  exist, then copies at most cap bytes of its value into buf and writes its full
     *  length to *len. DTP_ERR_TIMEOUT if the key did not appear in time; another error
     *  (DTP_ERR_STORE: the store closed or stopped answering) if the store failed. */
    int32_t (*store_get)(void *host, const char *key, void *buf, size_t cap, size_t *len,
                         int32_t timeout_ms);

    /** HMAC-SHA256 of data keyed with the job token, written to mac[32]. The token never
     *  leaves the core. */
    int32_t (*auth_sign)(void *host, const void *data, size_t len, uint8_t mac[32]);

    /** DTP_OK when mac is HMAC-SHA256(job token, data), DTP_ERR_AUTH otherwise; compares
     *  in constant time. */
    int32_t (*auth_verify)(void *host, const void *data, size_t len, const uint8_t mac[32]);

    /** Fills buf with len cryptographically secure random bytes. */
    int32_t (*random_bytes)(void *host, void *buf, size_t len);

    /* Appended after the first release: NULL where the core's struct_size does not cover
     * it (an older core), so a plugin must check it before the call. */

    /** Writes the numeric address at which this process reaches the job's rendezvous
     *  store ("192.0.2.1:29500", "[2001:db8::1]:29500"; for a job on one host often a
     *  loopback one), NUL-terminated, into buf and its length without the NUL to *len.
     *  DTP_ERR_INVALID_ARGUMENT when cap is too small (*len still says how long it is);
     *  DTP_ERR_STORE when the context has not reached its store; DTP_ERR_UNSUPPORTED
     *  where the host lends no store (to compute plugins). A transport that picks a
     *  network interface uses it to find the one the kernel routes towards the store's
     *  host. Does not block. */
    int32_t (*store_address)(void *host, char *buf, size_t cap, size_t *len);
} dt_host_services_t;

/** Version of the negotiation structs below; they are not versioned with the ops tables. */
#define DT_PLUGIN_NEGOTIATION_VERSION 1u

/** What the core offers a plugin (core to plugin). */
typedef struct dt_plugin_offer {
    uint32_t struct_size;
    uint32_t abi_version;     /**< DT_PLUGIN_NEGOTIATION_VERSION */
    uint32_t max_ops_version; /**< newest ops-table version the core speaks, per kind */
    uint32_t min_ops_version; /**< oldest ops-table version the core still adapts */
    const dt_host_services_t *services;
} dt_plugin_offer_t;

/** What the plugin answers (plugin fills the core's struct). */
typedef struct dt_plugin_answer {
    uint32_t struct_size; /**< set by the core: sizeof its struct; write only within it */
    uint32_t abi_version; /**< set by the core: DT_PLUGIN_NEGOTIATION_VERSION */
    uint32_t kind;        /**< DT_PLUGIN_KIND_* */
    uint32_t ops_version; /**< version of the table in ops, <= offer->max_ops_version */
    const char *name;     /**< short name ("tcp"); static storage */
    const void *ops;      /**< e.g. const dt_transport_v2_t *; static storage */
    const char *decline_reason; /**< why, when the plugin declines; static storage */
} dt_plugin_answer_t;

/**
 * The entry point. Returns DTP_OK and fills answer to accept, or DTP_ERR_UNSUPPORTED
 * (with answer->decline_reason) to decline, e.g. when it speaks no version in
 * [min_ops_version, max_ops_version] or its library cannot run on this machine.
 * Must not block and must not keep a pointer to offer (services may be kept).
 */
typedef int32_t (*dt_plugin_negotiate_fn)(const dt_plugin_offer_t *offer,
                                          dt_plugin_answer_t *answer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DISTTRAIN_PLUGIN_COMMON_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The _ex collectives of API 1.1 as a C99 user calls them, on a one-rank context: host
 * memory runs, device memory is refused at once with DT_ERR_UNSUPPORTED and a message
 * naming the call, bad fields are DT_ERR_INVALID_ARGUMENT naming the field, and every
 * _ex entry point takes NULL params as host memory.
 */
#include <disttrain/disttrain.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAILED: %s (last error: %s)\n", what, dt_last_error());
        ++failures;
    }
}

static int mentions(const char *part) { return strstr(dt_last_error(), part) != NULL; }

int main(void)
{
    dt_context_params_t cp = {0};
    dt_context_h ctx = NULL;
    dt_op_params_t host = {0}, device = {0}, autop = {0}, bad = {0};
    dt_request_h req = NULL;
    float a[4] = {1, 2, 3, 4}, b[4] = {0}, g[4] = {0};
    dt_version_t v;

    cp.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    cp.rank = 0;
    cp.size = 1;
    if (dt_context_create(&cp, &ctx) != DT_OK) {
        fprintf(stderr, "dt_context_create: %s\n", dt_last_error());
        return 1;
    }
    expect(dt_get_version(&v) == DT_OK && v.api_minor >= 1, "library speaks API 1.1");

    host.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    host.memory_type = DT_MEMORY_HOST;
    expect(dt_allreduce_ex(ctx, "h", a, b, 4, DT_FLOAT32, DT_SUM, &host) == DT_OK &&
               b[3] == 4.0f,
           "host allreduce_ex");
    expect(dt_allreduce_ex(ctx, "n", a, b, 4, DT_FLOAT32, DT_SUM, NULL) == DT_OK,
           "NULL params are host memory");
    autop.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    autop.memory_type = DT_MEMORY_AUTO;
    expect(dt_allreduce_ex(ctx, "auto", a, b, 4, DT_FLOAT32, DT_AVG, &autop) == DT_OK,
           "auto is host while no memory provider is loaded");

    device.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_DEVICE |
                        DT_OP_PARAM_FIELD_STREAM;
    device.memory_type = DT_MEMORY_DEVICE;
    device.device = 0;
    device.stream = &device;
    expect(dt_allreduce_ex(ctx, "grad.w", a, b, 4, DT_FLOAT32, DT_SUM, &device) ==
               DT_ERR_UNSUPPORTED,
           "device allreduce is unsupported");
    expect(mentions("dt_allreduce 'grad.w'") && mentions("needs a memory provider"),
           "the message names the call and what device memory needs");
    expect(dt_broadcast_async_ex(ctx, "bc", a, 4, DT_FLOAT32, 0, &device, &req) ==
               DT_ERR_UNSUPPORTED && req == NULL,
           "device broadcast_async is refused at once, no request written");
    expect(mentions("buf is device memory"), "the broadcast's buffer is named");

    bad.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    bad.memory_type = (dt_memory_type_t)9;
    expect(dt_alltoall_ex(ctx, "x", a, b, 4, DT_FLOAT32, &bad) == DT_ERR_INVALID_ARGUMENT &&
               mentions("params->memory_type 9"),
           "an unknown memory type names the field");
    bad.field_mask = DT_OP_PARAM_FIELD_DEVICE;
    bad.device = -2;
    expect(dt_barrier_ex(ctx, "y", &bad) == DT_ERR_INVALID_ARGUMENT &&
               mentions("params->device -2"),
           "a negative device names the field, on a barrier too");

    /* Every _ex entry point, host memory. */
    expect(dt_broadcast_ex(ctx, NULL, a, 4, DT_FLOAT32, 0, &host) == DT_OK, "broadcast_ex");
    expect(dt_allgather_ex(ctx, NULL, a, g, 4, DT_FLOAT32, &host) == DT_OK, "allgather_ex");
    expect(dt_reduce_scatter_ex(ctx, NULL, a, b, 4, DT_FLOAT32, DT_SUM, &host) == DT_OK,
           "reduce_scatter_ex");
    expect(dt_alltoall_ex(ctx, NULL, a, b, 4, DT_FLOAT32, &host) == DT_OK, "alltoall_ex");
    expect(dt_barrier_ex(ctx, NULL, &device) == DT_OK, "a barrier moves no buffer");
    expect(dt_allreduce_async_ex(ctx, NULL, a, b, 4, DT_FLOAT32, DT_MAX, &host, &req) ==
                   DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "allreduce_async_ex");
    dt_request_free(req);
    expect(dt_broadcast_async_ex(ctx, NULL, a, 4, DT_FLOAT32, 0, NULL, &req) == DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "broadcast_async_ex");
    dt_request_free(req);
    expect(dt_allgather_async_ex(ctx, NULL, a, g, 4, DT_FLOAT32, NULL, &req) == DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "allgather_async_ex");
    dt_request_free(req);
    expect(dt_reduce_scatter_async_ex(ctx, NULL, a, b, 4, DT_FLOAT32, DT_MIN, NULL, &req) ==
                   DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "reduce_scatter_async_ex");
    dt_request_free(req);
    expect(dt_alltoall_async_ex(ctx, NULL, a, b, 4, DT_FLOAT32, NULL, &req) == DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "alltoall_async_ex");
    dt_request_free(req);
    expect(dt_barrier_async_ex(ctx, NULL, NULL, &req) == DT_OK &&
               dt_request_wait(req, -1) == DT_OK,
           "barrier_async_ex");
    dt_request_free(req);

    /* API 1.2: the uneven forms, every entry point (a job of one: counts of one rank). */
    {
        const size_t four = 4;
        expect(dt_allgatherv_ex(ctx, NULL, a, g, 4, &four, DT_FLOAT32, &host) == DT_OK,
               "allgatherv_ex");
        expect(dt_alltoallv_ex(ctx, NULL, a, b, &four, &four, DT_FLOAT32, &host) == DT_OK,
               "alltoallv_ex");
        expect(dt_allgatherv_async_ex(ctx, NULL, a, g, 4, &four, DT_FLOAT32, NULL, &req) ==
                       DT_OK &&
                   dt_request_wait(req, -1) == DT_OK,
               "allgatherv_async_ex");
        dt_request_free(req);
        expect(dt_alltoallv_async_ex(ctx, NULL, a, b, &four, &four, DT_FLOAT32, NULL, &req) ==
                       DT_OK &&
                   dt_request_wait(req, -1) == DT_OK,
               "alltoallv_async_ex");
        dt_request_free(req);
        req = NULL;
        expect(dt_allgatherv_async_ex(ctx, "gv", a, g, 4, &four, DT_FLOAT32, &device, &req) ==
                       DT_ERR_UNSUPPORTED && req == NULL,
               "device allgatherv is refused at once without a memory provider");
        expect(dt_alltoallv_ex(ctx, "av", a, b, &four, &four, DT_FLOAT32, &device) ==
                   DT_ERR_UNSUPPORTED && mentions("dt_alltoallv 'av'"),
               "device alltoallv is refused, naming the call");
    }

    expect(strcmp(dt_memory_type_name(DT_MEMORY_DEVICE), "device") == 0 &&
               strcmp(dt_memory_type_name((dt_memory_type_t)42), "unknown") == 0,
           "dt_memory_type_name");

    dt_context_destroy(ctx);
    printf("op params: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}

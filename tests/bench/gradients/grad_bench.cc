// SPDX-License-Identifier: Apache-2.0
/*
 * Gradient-shaped allreduce benchmark: the 161 tensors of ResNet-50 allreduced once per
 * step, as a data-parallel trainer does. Each step submits every gradient asynchronously
 * (named by its index, so the engine negotiates, caches and fuses them) and waits for
 * all. Prints steps per second; with --idle S it also lets the engine idle for S seconds
 * so its log shows the cost of an empty cycle. With --device the gradients live in device
 * memory of the provider DISTTRAIN_MEMORY names (the fake device, or cuda), so the step
 * also pays for staging through pinned host memory. Never asserts a time.
 *   grad_bench [--steps N] [--warmup N] [--idle S] [--device]
 */
#include "device_memory.h"
#include "resnet50_shapes.h"

#include <disttrain/disttrain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <exception>
#include <memory>
#include <vector>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(dt_status_t s, const char *what)
{
    if (s != DT_OK) {
        fprintf(stderr, "grad_bench: %s: %s: %s\n", what, dt_status_string(s), dt_last_error());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int steps = 20, warmup = 3;
    double idle = 0;
    bool on_device = false;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--device") == 0) on_device = true;
        else if (i + 1 == argc) { fprintf(stderr, "grad_bench: %s needs a value\n", argv[i]); return 2; }
        else if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--idle") == 0) idle = atof(argv[++i]);
        else { fprintf(stderr, "grad_bench: unknown option %s\n", argv[i]); return 2; }
    }
    std::unique_ptr<dt::testing::DeviceMemory> device;
    if (on_device) {
        try {
            device = std::make_unique<dt::testing::DeviceMemory>();
        } catch (const std::exception &e) {
            fprintf(stderr, "grad_bench: --device: %s\n", e.what());
            return 2;
        }
    }
    size_t counts[200];
    int n = resnet50_gradient_counts(counts, 200);
    size_t total = 0;
    void *grads[200];
    try {
        for (int i = 0; i < n; ++i) {
            total += counts[i];
            std::vector<float> ones(counts[i], 1.0f);
            const size_t bytes = counts[i] * sizeof(float);
            grads[i] = device ? device->alloc(bytes) : malloc(bytes);
            if (device)
                device->to_device(grads[i], ones.data(), bytes);
            else
                memcpy(grads[i], ones.data(), bytes);
        }
    } catch (const std::exception &e) {
        fprintf(stderr, "grad_bench: %s (the fake device: raise DISTTRAIN_FAKE_DEVICE_BYTES)\n",
                e.what());
        return 1;
    }
    dt_op_params_t params = {};
    params.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    params.memory_type = device ? DT_MEMORY_DEVICE : DT_MEMORY_HOST;
    dt_context_h ctx;
    check(dt_context_create(NULL, &ctx), "dt_context_create");
    int rank, size;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    dt_request_h reqs[200];
    char name[32];
    double start = 0;
    for (int step = 0; step < warmup + steps; ++step) {
        if (step == warmup)
            start = now_s();
        for (int i = 0; i < n; ++i) {
            snprintf(name, sizeof name, "grad.%d", i);
            check(dt_allreduce_async_ex(ctx, name, grads[i], grads[i], counts[i], DT_FLOAT32,
                                        DT_AVG, &params, &reqs[i]), "dt_allreduce_async");
        }
        for (int i = 0; i < n; ++i) {
            check(dt_request_wait(reqs[i], -1), "dt_request_wait");
            dt_request_free(reqs[i]);
        }
    }
    double elapsed = now_s() - start;
    float first = 0;
    if (device)
        device->to_host(&first, grads[0], sizeof first);
    else
        memcpy(&first, grads[0], sizeof first);
    if (first != 1.0f) {
        fprintf(stderr, "grad_bench: wrong average %g\n", first);
        return 1;
    }
    if (rank == 0)
        printf("resnet50 gradients: %d tensors, %zu float32, %d ranks, %s memory: %.2f "
               "steps/s (%.1f ms/step)\n", n, total, size, device ? "device" : "host",
               steps / elapsed, 1e3 * elapsed / steps);
    if (idle > 0) {
        struct timespec ts = {(time_t)idle, (long)((idle - (time_t)idle) * 1e9)};
        nanosleep(&ts, NULL);
    }
    check(dt_context_destroy(ctx), "dt_context_destroy");
    for (int i = 0; i < n; ++i) {
        if (device)
            device->free(grads[i]);
        else
            free(grads[i]);
    }
    return 0;
}

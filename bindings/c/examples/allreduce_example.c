/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allreduce from plain C99 through the public API.
 *
 * Run one process, or several under the launcher:
 *     ./allreduce_example
 *     disttrainrun -np 2 ./allreduce_example
 * Rank, size, store and transport come from the environment the launcher sets. Each rank
 * contributes rank + i at index i; after a sum every rank must hold
 * size * (size - 1) / 2 + size * i. Exits non-zero, printing dt_last_error(), on error.
 */
#include <disttrain/disttrain.h>

#include <stdio.h>

#define COUNT 8

/* Prints what failed with the library's explanation and returns 1. */
static int fail(const char *what, dt_status_t status)
{
    fprintf(stderr, "allreduce_example: %s failed: %s: %s\n", what, dt_status_string(status),
            dt_last_error());
    return 1;
}

int main(void)
{
    dt_context_h ctx = NULL;
    dt_status_t status;
    const char *transport = "";
    float data[COUNT];
    int rank = 0, size = 0, i, rc = 0;

    status = dt_context_create(NULL, &ctx); /* NULL params: all from the environment */
    if (status != DT_OK)
        return fail("dt_context_create", status);

    if ((status = dt_context_rank(ctx, &rank)) != DT_OK ||
        (status = dt_context_size(ctx, &size)) != DT_OK ||
        (status = dt_context_transport(ctx, &transport)) != DT_OK) {
        rc = fail("reading the context", status);
        goto out;
    }

    for (i = 0; i < COUNT; ++i)
        data[i] = (float)(rank + i);
    status = dt_allreduce(ctx, "example.values", data, data, COUNT, DT_FLOAT32, DT_SUM);
    if (status != DT_OK) {
        rc = fail("dt_allreduce", status);
        goto out;
    }

    printf("rank %d of %d (transport %s): allreduce sum =", rank, size, transport);
    for (i = 0; i < COUNT; ++i) {
        float expected = (float)(size * (size - 1) / 2 + size * i);
        printf(" %g", (double)data[i]);
        if (data[i] != expected) {
            fprintf(stderr, "\nallreduce_example: element %d is %g, expected %g\n", i,
                    (double)data[i], (double)expected);
            rc = 1;
        }
    }
    printf("\n%s\n", rc == 0 ? "allreduce_example: OK" : "allreduce_example: WRONG RESULT");

out:
    status = dt_context_destroy(ctx);
    if (status != DT_OK && rc == 0)
        rc = fail("dt_context_destroy", status);
    return rc;
}

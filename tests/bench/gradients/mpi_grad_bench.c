/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Open MPI twin of grad_bench: the 161 ResNet-50 gradients, one blocking
 * MPI_Allreduce per tensor per step (what a trainer without fusion does).
 *   mpirun -np 2 mpi_grad_bench [--steps N] [--warmup N]
 */
#include "resnet50_shapes.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int steps = 20, warmup = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t counts[200];
    int n = resnet50_gradient_counts(counts, 200);
    float *grads[200];
    for (int i = 0; i < n; ++i) {
        grads[i] = malloc(counts[i] * sizeof(float));
        for (size_t k = 0; k < counts[i]; ++k)
            grads[i][k] = 1.0f;
    }
    double start = 0;
    for (int step = 0; step < warmup + steps; ++step) {
        if (step == warmup)
            start = MPI_Wtime();
        for (int i = 0; i < n; ++i)
            MPI_Allreduce(MPI_IN_PLACE, grads[i], (int)counts[i], MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
    }
    double elapsed = MPI_Wtime() - start;
    if (rank == 0)
        printf("resnet50 gradients (MPI_Allreduce per tensor): %d tensors, %d ranks: %.2f "
               "steps/s (%.1f ms/step)\n", n, size, steps / elapsed, 1e3 * elapsed / steps);
    for (int i = 0; i < n; ++i)
        free(grads[i]);
    MPI_Finalize();
    return 0;
}

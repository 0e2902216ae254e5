/* SPDX-License-Identifier: Apache-2.0 */
// The 161 parameter tensors of ResNet-50 (torchvision layout, 25,557,032 float32 values),
// in the order backward produces their gradients (last layer first), for gradient-shaped
// allreduce benchmarks. C and C++.
#ifndef DT_BENCH_RESNET50_SHAPES_H
#define DT_BENCH_RESNET50_SHAPES_H

#include <stddef.h>

/* Writes up to cap element counts into counts and returns the number of tensors (161). */
static inline int resnet50_gradient_counts(size_t *counts, int cap)
{
    size_t forward[200];
    int n = 0;
#define ADD(x) (forward[n++] = (size_t)(x))
    ADD(64 * 3 * 7 * 7); ADD(64); ADD(64); /* stem conv + batch norm */
    const int blocks[4] = {3, 4, 6, 3}, widths[4] = {64, 128, 256, 512};
    int in = 64;
    for (int stage = 0; stage < 4; ++stage) {
        int w = widths[stage];
        for (int b = 0; b < blocks[stage]; ++b) {
            ADD(w * in); ADD(w); ADD(w);             /* 1x1 reduce */
            ADD(w * w * 9); ADD(w); ADD(w);          /* 3x3 */
            ADD(4 * w * w); ADD(4 * w); ADD(4 * w);  /* 1x1 expand */
            if (b == 0) {
                ADD(4 * w * in); ADD(4 * w); ADD(4 * w); /* downsample */
            }
            in = 4 * w;
        }
    }
    ADD(1000 * 2048); ADD(1000); /* fc */
#undef ADD
    for (int i = 0; i < n && i < cap; ++i)
        counts[i] = forward[n - 1 - i];
    return n;
}

#endif

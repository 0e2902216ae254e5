/* SPDX-License-Identifier: Apache-2.0 */
// How disttrain-perf sizes, launches and verifies each collective, following the
// conventions of nccl-tests (PERFORMANCE.md) for message sizes and bus bandwidth.
#pragma once

#include "perf_options.h"

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>

namespace dt::perf {

// Element counts of one operation. `bytes` is the size reported in the table: the
// largest buffer of the operation, as nccl-tests reports it.
struct Shape {
    size_t send_count = 0; // elements in the send buffer (0: no separate send buffer)
    size_t recv_count = 0; // elements in the receive (or only) buffer
    size_t count = 0;      // the count argument of the call
    size_t bytes = 0;
};

// The shape for a requested size in bytes; counts are rounded down so that blocks split
// evenly across ranks.
Shape shape_for(Collective collective, size_t bytes, size_t element_size, int ranks);

// Bus bandwidth = algorithm bandwidth * this factor: the share of data that crosses the
// slowest link for an optimal algorithm, which makes figures comparable across rank
// counts (nccl-tests PERFORMANCE.md).
double busbw_factor(Collective collective, int ranks);

// Buffers of one call. For in-place runs, send points into recv.
struct Call {
    dt_context_h ctx;
    const char *name;
    Collective collective;
    const void *send;
    void *recv;
    Shape shape;
    dt_dtype_t dtype;
    dt_reduce_op_t op;
    int root;
};

// Where the send buffer of an in-place call lies inside recv.
const void *inplace_send(Collective collective, void *recv, const Shape &shape,
                         size_t element_size, int rank);

// Runs the call; blocking when req is null, else through the _async form.
dt_status_t launch(const Call &call, dt_request_h *req);

// Fills the inputs of call with this rank's pattern, and the outputs with a value the
// correct result never holds, so that elements the library forgot to write are caught.
void fill_for_check(const Call &call, bool inplace, int rank, int ranks);

// Elements of the output that differ from the expected result on this rank.
uint64_t count_wrong(const Call &call, int rank, int ranks);

} // namespace dt::perf

/* SPDX-License-Identifier: Apache-2.0 */
// Before an allgatherv or alltoallv moves data, its ranks make sure their counts agree:
// a rank that expects more bytes than its peer sends would wait for them until the
// deadline, and one that expects fewer would have its buffer overrun. A small exchange
// of counts runs first, and every rank reaches the same verdict from the same data, so
// a disagreement fails the call on every rank at once, naming the ranks and the counts.
#pragma once

#include "algorithms/comm.h"

#include <cstddef>

namespace dt::algo {

// allgatherv: every rank passes the same recvcounts, recvcounts[r] being what rank r
// sends (the C API checked that for this rank). One allgather of {own count, hash of
// recvcounts}; only a disagreement costs a second, to name the counts. what: the call
// ("allgatherv 'name'"). Throws AgreedFailure (DT_ERR_MISMATCH) on every rank.
void agree_allgatherv_counts(Comm &comm, const size_t *recvcounts, const char *what);

// alltoallv: rank i's sendcounts[j] equals rank j's recvcounts[i] for every pair. An
// alltoall of the sendcounts, then an allgather of each rank's first disagreement.
// Throws AgreedFailure (DT_ERR_MISMATCH) on every rank.
void agree_alltoallv_counts(Comm &comm, const size_t *sendcounts, const size_t *recvcounts,
                            const char *what);

} // namespace dt::algo

/* SPDX-License-Identifier: Apache-2.0 */
// Splits a data set between ranks for data-parallel training.
//
// Every epoch the whole training set is shuffled with a permutation that depends only on
// (seed, epoch), so it is the same on every rank. Global batch k is the slice
// [k * B * ranks, (k + 1) * B * ranks) of that permutation and rank r takes its r-th
// block of B indices. Hence 2 ranks with batch B see exactly the samples of 1 rank with
// batch 2B, and averaging their gradients gives the same step. The tail that does not
// fill a global batch is dropped, as every rank must take the same number of steps.
// An elastic job keeps the global batch when its size changes (reshard): rank r then
// takes the r-th of `ranks` near-equal blocks of each global batch (shard_range), the
// remainder spread over the first ranks, so the job still sees the same samples per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dt::models {

// The contiguous slice [begin, end) of n items that rank takes for evaluation; slices of
// the ranks cover every item once and differ in size by at most one.
struct Range {
    size_t begin;
    size_t end;
};
Range shard_range(size_t n, int rank, int ranks);

class ShardedSampler {
public:
    ShardedSampler(size_t dataset_size, int rank, int ranks, size_t batch_per_rank,
                   uint64_t seed);

    size_t steps_per_epoch() const { return steps_; }
    size_t global_batch() const { return global_; }
    // Images this rank takes per step (global_batch() / ranks, remainder spread).
    size_t batch_size() const { return slice_.end - slice_.begin; }

    // Same global batch and permutation, for a job that re-formed with `ranks` ranks.
    // Throws InputError when a rank would get no image.
    void reshard(int rank, int ranks);
    // The running job's global batch, for a rank that joins it later (then reshard).
    void set_global_batch(size_t global_batch);

    // Draws the permutation of epoch `epoch` (0-based); batch() reads from it.
    void set_epoch(uint64_t epoch);

    // This rank's indices of step `step` (0 <= step < steps_per_epoch()) of the epoch.
    std::span<const uint32_t> batch(size_t step) const;

private:
    size_t n_;
    size_t global_;
    uint64_t seed_;
    size_t steps_;
    Range slice_; // this rank's part of each global batch
    std::vector<uint32_t> order_;
};

} // namespace dt::models

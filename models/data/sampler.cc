// SPDX-License-Identifier: Apache-2.0
#include "data/sampler.h"

#include "common/error.h"
#include "common/random.h"

#include <numeric>

namespace dt::models {

ShardedSampler::ShardedSampler(size_t dataset_size, int rank, int ranks,
                               size_t batch_per_rank, uint64_t seed)
    : n_(dataset_size), global_(0), seed_(seed), steps_(0), slice_{0, 0},
      order_(dataset_size)
{
    if (batch_per_rank == 0)
        throw_input_error("the batch size must be at least 1");
    // The product can wrap around (a --batch-size near 2^64): to 0, which would divide by
    // zero below, or to a small global batch, which would train on batches nobody asked for.
    const bool wraps = __builtin_mul_overflow(batch_per_rank, size_t(ranks), &global_);
    if (wraps || global_ > n_)
        throw_input_error("the training set has ", n_, " samples, fewer than one global "
                          "batch of ", batch_per_rank, " x ", ranks, " ranks",
                          wraps ? std::string() : cat(" = ", global_),
                          "; use a smaller --batch-size or fewer ranks");
    steps_ = n_ / global_;
    reshard(rank, ranks);
}

void ShardedSampler::set_global_batch(size_t global_batch)
{
    if (global_batch == 0 || n_ / global_batch == 0)
        throw_input_error("a global batch of ", global_batch, " images does not fit a "
                          "training set of ", n_);
    global_ = global_batch;
    steps_ = n_ / global_;
}

void ShardedSampler::reshard(int rank, int ranks)
{
    if (size_t(ranks) > global_)
        throw_input_error("a job of ", ranks, " ranks cannot share a global batch of ",
                          global_, " images (a rank would get none); start the job with "
                          "a larger --batch-size");
    slice_ = shard_range(global_, rank, ranks);
}

void ShardedSampler::set_epoch(uint64_t epoch)
{
    std::iota(order_.begin(), order_.end(), uint32_t{0});
    // Fisher-Yates with our own generator, so every rank and every platform agrees.
    Random rng(mix_seed(seed_, epoch + 1));
    for (size_t i = n_; i > 1; --i) {
        const size_t j = rng.below(i);
        std::swap(order_[i - 1], order_[j]);
    }
}

std::span<const uint32_t> ShardedSampler::batch(size_t step) const
{
    const size_t start = step * global_ + slice_.begin;
    return std::span<const uint32_t>(order_).subspan(start, batch_size());
}

Range shard_range(size_t n, int rank, int ranks)
{
    const size_t base = n / size_t(ranks), extra = n % size_t(ranks), r = size_t(rank);
    const size_t begin = r * base + std::min(r, extra);
    return {begin, begin + base + (r < extra ? 1 : 0)};
}

} // namespace dt::models

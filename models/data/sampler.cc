// SPDX-License-Identifier: Apache-2.0
#include "data/sampler.h"

#include "common/error.h"
#include "common/random.h"

#include <numeric>

namespace dt::models {

ShardedSampler::ShardedSampler(size_t dataset_size, int rank, int ranks,
                               size_t batch_per_rank, uint64_t seed)
    : n_(dataset_size), rank_(rank), ranks_(ranks), batch_(batch_per_rank), seed_(seed),
      steps_(0), order_(dataset_size)
{
    if (batch_per_rank == 0)
        throw_input_error("the batch size must be at least 1");
    steps_ = n_ / global_batch();
    if (steps_ == 0)
        throw_input_error("the training set has ", n_, " samples, fewer than one global "
                          "batch of ", batch_, " x ", ranks_, " ranks = ", global_batch(),
                          "; use a smaller --batch-size or fewer ranks");
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
    const size_t start = step * global_batch() + size_t(rank_) * batch_;
    return std::span<const uint32_t>(order_).subspan(start, batch_);
}

Range shard_range(size_t n, int rank, int ranks)
{
    const size_t base = n / size_t(ranks), extra = n % size_t(ranks), r = size_t(rank);
    const size_t begin = r * base + std::min(r, extra);
    return {begin, begin + base + (r < extra ? 1 : 0)};
}

} // namespace dt::models

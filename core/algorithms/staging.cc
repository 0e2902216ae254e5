// SPDX-License-Identifier: Apache-2.0
#include "algorithms/staging.h"

#include <vector>

namespace dt::algo {

namespace {

// Enough for the first messages of a call among a few peers in flight at once; more are
// freed (a buffer released on another thread joins that thread's list).
constexpr size_t kKeptPerThread = 8;

struct Kept {
    std::vector<std::byte *> buffers;
    ~Kept()
    {
        for (std::byte *b : buffers)
            delete[] b;
    }
};

Kept &kept()
{
    thread_local Kept k;
    return k;
}

} // namespace

void StagingRelease::operator()(std::byte *buffer) const noexcept
{
    Kept &k = kept();
    if (k.buffers.size() < kKeptPerThread) {
        k.buffers.push_back(buffer); // reserved below: never throws
        return;
    }
    delete[] buffer;
}

Staging take_staging()
{
    Kept &k = kept();
    if (k.buffers.capacity() < kKeptPerThread)
        k.buffers.reserve(kKeptPerThread);
    if (!k.buffers.empty()) {
        std::byte *b = k.buffers.back();
        k.buffers.pop_back();
        return Staging(b);
    }
    return Staging(new std::byte[kStagingBytes]);
}

} // namespace dt::algo

/* SPDX-License-Identifier: Apache-2.0 */
// Buffers for ordered mode's call check on the point-to-point path (comm.h): the first
// message of a call to or from each peer goes through one (the check, then the data).
// Every one is the same size, room for the check and the largest inline message, and
// each thread keeps a few it has used: a malloc and free of 16 KiB per message cost the
// allocator's trimming and growing of the heap (system calls) on a 4 B allreduce.
#pragma once

#include "runtime/call_check.h"

#include <cstddef>
#include <memory>

namespace dt::algo {

// Messages up to this size carry the call check inline (one copy at each end); larger
// ones are preceded by a message holding only the check, which costs less than copying.
constexpr size_t kInlineCheckedBytes = 16 * 1024;
constexpr size_t kStagingBytes = sizeof(CallCheck) + kInlineCheckedBytes;

struct StagingRelease {
    void operator()(std::byte *buffer) const noexcept;
};
using Staging = std::unique_ptr<std::byte[], StagingRelease>;

// A buffer of kStagingBytes, uninitialised: one this thread released before, or new.
Staging take_staging();

} // namespace dt::algo

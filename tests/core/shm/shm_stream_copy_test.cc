// SPDX-License-Identifier: Apache-2.0
// stream_copy (non-temporal stores for whole lines, plain copies for the partial lines at
// either end) copies exactly what memcpy does, at every alignment of either pointer, and
// writes nothing outside the destination.
#include "shm/stream_copy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::shm {
namespace {

TEST(StreamCopy, EveryAlignmentAndLengthMatchesMemcpy)
{
    constexpr size_t kGuard = 64;
    for (size_t dst_skew = 0; dst_skew < 64; dst_skew += 7)
        for (size_t src_skew = 0; src_skew < 64; src_skew += 13)
            for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65),
                                 size_t(127), size_t(200), size_t(4096 + 33)}) {
                std::vector<uint8_t> src(bytes + 128), dst(bytes + 128 + 2 * kGuard, 0xA5);
                for (size_t i = 0; i < src.size(); ++i)
                    src[i] = static_cast<uint8_t>(i * 131 + 7);
                const auto base = reinterpret_cast<uintptr_t>(dst.data() + kGuard);
                uint8_t *d = dst.data() + kGuard + (64 - base % 64) % 64 + dst_skew;
                const uint8_t *s = src.data() + src_skew;
                stream_copy(d, s, bytes);
                stream_fence();
                for (size_t i = 0; i < bytes; ++i)
                    ASSERT_EQ(d[i], s[i]) << "byte " << i << " of " << bytes << ", dst skew "
                                          << dst_skew << ", src skew " << src_skew;
                for (uint8_t *p = dst.data(); p < d; ++p)
                    ASSERT_EQ(*p, 0xA5) << "wrote before the destination";
                for (uint8_t *p = d + bytes; p < dst.data() + dst.size(); ++p)
                    ASSERT_EQ(*p, 0xA5) << "wrote past the destination";
            }
}

} // namespace
} // namespace dt::shm

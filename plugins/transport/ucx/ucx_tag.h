/* SPDX-License-Identifier: Apache-2.0 */
// The core's 64-bit tag and the sender's rank in one UCP tag, so a receive matches one
// (peer, tag) exactly with a full mask. Layout, high to low:
//   [ source rank : 20 ][ class : 4 ][ low 40 bits of the core's tag ]
// The core keeps its classes above bit 40 (operations 1, negotiation 2, control 3);
// classes 0..14 map to themselves, anything higher shares class 15 with its high bits
// folded into the low ones (deterministic on every rank, so order per tag still holds).
// Class 15 with the top low bit pattern below is the plugin's own wire-up hello.
#pragma once

#include <cstdint>

namespace dt::ucx {

constexpr int kRankBits = 20;
constexpr int kMaxRanks = 1 << kRankBits;
constexpr uint64_t kLowMask = (uint64_t(1) << 40) - 1;
constexpr uint64_t kFullMask = ~uint64_t(0);

inline uint64_t encode_tag(uint64_t tag, int source) {
    uint64_t cls = tag >> 40;
    uint64_t low = tag & kLowMask;
    if (cls >= 15) {
        low = (low ^ (cls * 0x9E3779B97F4A7C15ull)) & kLowMask;
        cls = 15;
    }
    return (static_cast<uint64_t>(source) << 44) | (cls << 40) | low;
}

// The hello every rank sends every peer during init: class 15, all low bits set. A user
// tag could fold onto it only before init returns, when the core sends nothing.
inline uint64_t hello_tag(int source) {
    return (static_cast<uint64_t>(source) << 44) | (uint64_t(15) << 40) | kLowMask;
}

} // namespace dt::ucx

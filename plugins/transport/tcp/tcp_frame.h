/* SPDX-License-Identifier: Apache-2.0 */
// The wire format of a data message: a fixed header followed by `length` payload bytes.
// Sent header and payload together with writev. Every received header is validated
// before anything is allocated or copied for it: a peer that sends garbage loses its
// connection, never corrupts memory.
//
// Fields are in host byte order: every rank of a job runs the same build on the same
// architecture, and a rank of another byte order fails the magic check.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace dt::tcp {

constexpr uint32_t kFrameMagic = 0x44544652; // "DTFR"

struct FrameHeader {
    uint32_t magic;
    uint32_t flags; // reserved, 0; ignored by this version
    uint64_t tag;
    uint64_t length;
};
static_assert(sizeof(FrameHeader) == 24, "the frame header is part of the wire format");

inline FrameHeader make_frame(uint64_t tag, uint64_t length) {
    return FrameHeader{kFrameMagic, 0, tag, length};
}

// Empty when the header is acceptable, else why not (for a message naming the peer).
inline std::string check_frame(const FrameHeader &h, uint64_t max_length) {
    char buf[160];
    if (h.magic != kFrameMagic) {
        std::snprintf(buf, sizeof(buf),
                      "bad frame magic 0x%08x (expected 0x%08x): the stream is corrupt or "
                      "the peer is not a disttrain tcp transport",
                      h.magic, kFrameMagic);
        return buf;
    }
    if (h.length > max_length) {
        std::snprintf(buf, sizeof(buf),
                      "frame of %llu bytes exceeds the limit of %llu bytes "
                      "(DISTTRAIN_TCP_MAX_MESSAGE)",
                      static_cast<unsigned long long>(h.length),
                      static_cast<unsigned long long>(max_length));
        return buf;
    }
    return {};
}

} // namespace dt::tcp

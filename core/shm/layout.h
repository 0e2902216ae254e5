/* SPDX-License-Identifier: Apache-2.0 */
// What a rank's segment holds. The owner writes everything in it; peers only read it
// (their mapping is read-only). Every flag sits in its own cache line, so a reader
// polling one never steals the line its owner is writing next.
//
//   Header        pid, rank, failure state; the single-copy probe word and verdict
//   reason        why this rank failed (text), for the peers' error messages
//   TagLine x 2   the tag of the collective being published, the hash of its call check
//                 (ordered mode) and a 48-byte inline payload (the single-copy allreduce
//                 publishes its buffers there: CallBuffers). Calls write the two lines
//                 in turn and readers look at both, so a tiny call rewrites a line its
//                 peers acknowledged one call earlier, which they have done by the time
//                 they published the call before this one: back-to-back tiny calls
//                 never wait for an ack (4 B allreduce, 2 ranks: one cache line's round
//                 trip per call instead of two)
//   posted        progress counters of the pipelined collectives (pieces done so far)
//   reduced
//   done
//   wake          futex word the owner bumps after each update; sleepers wait on it;
//                 and the CPU it ran on (spinning for a peer on our own CPU is futile)
//   sleeping      1 + local index of the peer this rank sleeps on (0: awake)
//   acks[n]       acks[w] = n: this rank has finished reading w's segment in the n-th call
//                 the two shared
//   call          the call check behind TagLine::check, read by a peer only when the
//                 hashes differ; a line apart from every line peers read, since a
//                 reader's next-line prefetch would otherwise pull it into the reader's
//                 cache and make each publish pay for taking it back (4 B allreduce
//                 0.77 -> 0.82 us with it right after the tag line)
//   data          the staging area (DISTTRAIN_SHM_BYTES), split in slots
#pragma once

#include "runtime/call_check.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dt::shm {

constexpr size_t kLine = 64;

struct alignas(kLine) Line {
    std::atomic<uint64_t> value;
};
static_assert(sizeof(Line) == kLine);

// A tag, the call's check and a tiny message in one cache line: the reader that sees the
// tag has the rest in the same transfer. check: call_check_hash of the call in ordered
// mode (runtime/call_check.h), 0 for a negotiated call; every reader compares it with
// its own before it reads anything the writer published.
constexpr size_t kInlineBytes = kLine - 2 * sizeof(uint64_t);
struct alignas(kLine) TagLine {
    std::atomic<uint64_t> tag;
    std::atomic<uint64_t> check;
    std::byte payload[kInlineBytes];
};
static_assert(sizeof(TagLine) == kLine);

// The whole call check behind TagLine::check, written before the tag is published.
struct alignas(kLine) CheckLine {
    CallCheck call;
};
static_assert(sizeof(CheckLine) == kLine);

struct alignas(kLine) WakeLine {
    std::atomic<uint32_t> gen; // a futex word (32 bits)
    std::atomic<int32_t> cpu;  // the CPU the owner last updated a flag from
};
static_assert(sizeof(WakeLine) == kLine);

constexpr uint64_t kMagic = 0x6d68732d74647464; // "ddtd-shm"

// Owner states a waiting peer looks at (Header::state).
enum : uint32_t { kStateLive = 1, kStateFailed = 2, kStateClosed = 3 };

// Header::cma: this rank's verdict after probing every peer with process_vm_readv at
// attach time (0 in a fresh segment: not decided).
enum : uint32_t { kCmaYes = 1, kCmaNo = 2 };

struct alignas(kLine) Header {
    uint64_t magic;
    int32_t pid;
    int32_t world_rank;
    std::atomic<uint32_t> state;
    uint32_t local_size;
    uint64_t data_bytes;
    // Single-copy reads (cma.h): a word of this process that holds probe_value, at
    // probe_addr in this process's address space, for the peers' probe; and whether
    // this rank could read every peer's memory (kCmaYes / kCmaNo), set before the
    // domain's last rendezvous, so every rank knows every verdict before any call.
    uint64_t probe_addr;
    uint64_t probe_value;
    std::atomic<uint32_t> cma;
};
static_assert(sizeof(Header) == kLine);

// What the single-copy allreduce publishes as its tag line's payload: where the call's
// buffers are in the publisher's address space (peers read them with process_vm_readv;
// nothing is ever written to them from outside), and the call's arguments, which every
// member checks against its own before reading a byte: reading a peer's memory with
// another rank's idea of its size would read past the peer's buffer.
struct CallBuffers {
    uint64_t send;
    uint64_t recv;
    uint64_t bytes;
    uint32_t dtype;
    uint32_t op;
    // Only the first member's counts: which path every member takes (path_choice.h).
    uint32_t path;
};
static_assert(sizeof(CallBuffers) <= kInlineBytes);

// Written before Header::state turns kStateFailed.
constexpr size_t kReasonBytes = 4 * kLine;

struct Control {
    Header header;
    char reason[kReasonBytes];
    TagLine tags[2];
    Line posted;
    Line reduced;
    Line done;
    WakeLine wake;
    Line sleeping;
    Line acks[1]; // local_size of them
};

// acks[i] beyond the declared one: the lines follow Control in the segment.
inline std::atomic<uint64_t> &ack(Control &c, int i)
{
    auto *base = reinterpret_cast<std::byte *>(&c) + offsetof(Control, acks);
    return reinterpret_cast<Line *>(base + static_cast<size_t>(i) * kLine)->value;
}
inline const std::atomic<uint64_t> &ack(const Control &c, int i)
{
    return ack(const_cast<Control &>(c), i);
}

// After the acks and one line of padding.
inline CheckLine &call_line(Control &c, int local_size)
{
    auto *base = reinterpret_cast<std::byte *>(&c) + offsetof(Control, acks);
    return *reinterpret_cast<CheckLine *>(base + static_cast<size_t>(local_size + 1) * kLine);
}
inline const CheckLine &call_line(const Control &c, int local_size)
{
    return call_line(const_cast<Control &>(c), local_size);
}

inline size_t control_bytes(int local_size)
{
    size_t raw = offsetof(Control, acks) + static_cast<size_t>(local_size + 2) * kLine;
    return (raw + 4095) & ~size_t(4095); // the data area starts on a page
}

} // namespace dt::shm

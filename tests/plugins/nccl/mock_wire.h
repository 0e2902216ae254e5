/* SPDX-License-Identifier: Apache-2.0 */
// How the ranks of one mock NCCL communicator, each a process of this host, exchange
// data: a POSIX shared-memory object named by the unique id, holding one slot per rank.
// The k-th collective on the communicator is exchanged in two steps that each rank polls
// without blocking:
//   post(k, bytes)    once every rank has read its slot's (k-1)-th data, writes this
//                     rank's k-th contribution there and marks it posted;
//   gathered(k)       true once every rank posted its k-th; the caller then reads the
//                     slots and calls consumed(k).
// A rank that exited (its pid is gone) or aborted its communicator is a remote error on
// the others' next poll: the survivors fail instead of waiting for it forever.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclmock {

constexpr int kMaxRanks = 16;

class Wire {
public:
    // Creates or opens the object `name` (every rank passes the same) with a data slot of
    // slot_bytes per rank, and marks this rank attached. Throws std::runtime_error.
    Wire(const std::string &name, int nranks, int rank, size_t slot_bytes);
    ~Wire();
    Wire(const Wire &) = delete;
    Wire &operator=(const Wire &) = delete;

    int nranks() const { return nranks_; }
    int rank() const { return rank_; }
    size_t slot_bytes() const { return slot_bytes_; }

    // Every rank attached.
    bool all_attached() const;
    // Removes the name (the mapping stays): once every rank attached, nobody opens it.
    void unlink();
    // Tells the peers this rank aborted its communicator.
    void mark_aborted();
    // "" while every peer is alive; else why not ("rank 1 (pid 123) exited").
    std::string peer_failure() const;

    // This rank's slot, to write before post().
    char *my_slot() { return slot(rank_); }
    const char *slot(int r) const;
    char *slot(int r);
    // Per-rank side table of a slot (offsets of point-to-point segments).
    uint64_t *table(int r);
    const uint64_t *table(int r) const;

    // Whether this rank may write its k-th contribution (every rank consumed k-1).
    bool may_post(uint64_t k) const;
    void post(uint64_t k);
    bool gathered(uint64_t k) const;
    void consumed(uint64_t k);

private:
    struct Slot {
        std::atomic<uint64_t> posted;
        std::atomic<uint64_t> consumed;
        uint64_t table[kMaxRanks + 1];
    };
    struct Header {
        std::atomic<int32_t> pid[kMaxRanks];
        std::atomic<int32_t> aborted[kMaxRanks];
        Slot slots[kMaxRanks];
    };

    std::string name_;
    int nranks_;
    int rank_;
    size_t slot_bytes_;
    size_t mapped_ = 0;
    Header *header_ = nullptr;
    char *data_ = nullptr;
    bool unlinked_ = false;
};

} // namespace ncclmock

/* SPDX-License-Identifier: Apache-2.0 */
// The core's 64-bit tags in MPI's tag range. The core keeps classes of tags in the bits
// above 40 (operations 1<<40 + seq, negotiation 2<<40 + cycle, control 3<<40) while
// MPI_TAG_UB may be as small as 32767. Each class gets its own duplicate of
// MPI_COMM_WORLD, and within a class the tag is folded modulo MPI_TAG_UB + 1. Folding is
// deterministic on every rank, and MPI keeps messages in order per (communicator, source,
// tag), so the order per (peer, tag) holds. Two tags of one class alias only when they
// are MPI_TAG_UB + 1 apart, which needs that many collectives in flight at once between
// two ranks: the engine's per-cycle negotiation keeps ranks far closer than that.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>

namespace dt::mpi {

class TagSpace {
public:
    // Duplicates MPI_COMM_WORLD once per class and once for collectives (collective: every rank calls it in the
    // same order) and sets MPI_ERRORS_RETURN on each, so a failed operation is a status,
    // never an abort of the job.
    TagSpace();
    ~TagSpace();
    TagSpace(const TagSpace &) = delete;
    TagSpace &operator=(const TagSpace &) = delete;

    struct Mapped {
        MPI_Comm comm;
        int tag;
    };
    Mapped map(uint64_t tag) const;

    int tag_ub() const { return tag_ub_; }
    // A duplicate of its own for native collectives, which MPI matches by call order.
    MPI_Comm collectives() const { return comms_[kClasses]; }

    // Classes 0..3 are the core's (0 for small tags), 4 takes every other high part.
    static constexpr int kClasses = 5;

private:
    std::array<MPI_Comm, kClasses + 1> comms_{};
    int tag_ub_ = 32767;
};

} // namespace dt::mpi

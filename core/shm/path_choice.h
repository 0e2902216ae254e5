/* SPDX-License-Identifier: Apache-2.0 */
// Which path a large allreduce takes where the ranks may read each other's buffers
// (process_vm_readv): staging through the segments, or single-copy reads. Neither wins
// everywhere, and nothing cheap to probe predicts which will:
//  - on one host (an AMD EPYC VM) the two vCPUs mostly shared an L3: staging
//    won 1.3-1.5x; every few seconds they did not (a cache line's round trip 55 ->
//    340 ns): staging slowed 2.5-3x and direct reads won 1.5-2.2x;
//  - on another (AMD EPYC Zen 5 VM under PVM) process_vm_readv moved ~1 GB/s
//    on pages the kernel had not touched yet (2 ranks, 64 KiB - 4 MiB; staging 4-6 GB/s)
//    and 5-6 GB/s on pages it had, where it still lost at 64-256 KiB, whatever the
//    round trip (100-420 ns): a round-trip threshold chose the slower path, up to 4x.
// Staging itself hands its pieces over through the cache or through memory
// (non-temporal stores, allreduce.cc), and which is faster changes with the same L3
// sharing: through memory ran 1.6-3x faster while the vCPUs shared no L3, and up to 15%
// slower (16-64 MiB) while they did; so where both may run it is a third path.
// So the first member of each call times the path it took and chooses by those times:
// per size class (a power of two of bytes), each path is tried twice, then the faster
// one runs, and the slower one is tried again now and then to follow a host that
// changes under a running job. It publishes the choice with its buffers
// (CallBuffers::path) and every member takes that path, so the members never disagree,
// whatever their own timings say.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace dt::shm {

// CallBuffers::path, as the first member sets it: read the peers' buffers; without it,
// stage through the segments, handing pieces over through memory with kPathThroughMemory
// and through the cache without.
constexpr uint32_t kPathSingleCopy = 1;
constexpr uint32_t kPathThroughMemory = 2;

class PathChooser {
public:
    using Clock = std::chrono::steady_clock;
    enum Path { kStaging = 0, kSingleCopy = 1, kStagingThroughMemory = 2 };
    static constexpr int kPaths = 3;

    // The path for a call of `bytes` among the first `offered` paths (2: staging and
    // single copy; 3: staging through memory too): each kFirstTries times in turn for a
    // new size class, then the fastest, or a slower one whose last try is older than its
    // retry period.
    Path choose(size_t bytes, Clock::time_point now, int offered = 2) const;
    // How long `path` took for a call of `bytes` (the first member's time from every
    // member's arrival to its own end), at `now`.
    void record(size_t bytes, Path path, Clock::duration took, Clock::time_point now);

    // Tries of the slower path are kRetryCost times its own duration apart, and at least
    // kRetryAfter: it costs the job a few percent at most, and the job notices a change
    // of the host within a few hundred milliseconds for the sizes that matter most.
    static constexpr auto kRetryAfter = std::chrono::milliseconds(100);
    static constexpr int kRetryCost = 50;
    static constexpr int kFirstTries = 2;

private:
    // Per path and class, the last kSamples durations per byte; the fastest of them is
    // the estimate: a preempted or interrupted call only ever looks slower, so one slow
    // sample does not flip the choice, and a faster path shows on its first try.
    static constexpr int kSamples = 3;
    struct Times {
        std::array<double, kSamples> ns_per_byte{};
        int count = 0; // samples kept (at most kSamples); 0: never ran
        int next = 0;  // slot the next sample goes to
        Clock::time_point last_try{};
        double estimate() const;
    };
    static constexpr int kClasses = 48; // 2^0 .. 2^47 bytes
    static int size_class(size_t bytes);
    std::array<std::array<Times, kPaths>, kClasses> times_{};
};

} // namespace dt::shm

/* SPDX-License-Identifier: Apache-2.0 */
// The fake device's memory: one memfd mapped twice. Device pointers point into a
// PROT_NONE view, so any CPU access to them faults exactly as a CPU touch of real device
// memory would; the provider's own copies go through a read-write shadow view of the same
// pages, found by translating the device pointer (shadow()).
//
// It lives in its own shared library (libfakedevice-arena.so, test-only) that the memory
// provider and the compute plugin both link, so the process has one arena however many
// fake plugins it loads: a pointer either of them hands out is device memory to both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

// The plugins build with hidden visibility; what the arena library exports is this.
#define FAKEDEVICE_ARENA_API __attribute__((visibility("default")))

namespace fakedevice {

class FAKEDEVICE_ARENA_API Arena {
public:
    // Maps `bytes` of device memory (rounded up to pages). Throws std::runtime_error
    // naming the call that failed.
    explicit Arena(size_t bytes);
    ~Arena();
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;

    // Whether ptr lies in the device view. Lock-free: the views never move, so the
    // pointer query never waits, as the ABI requires.
    bool contains(const void *ptr) const noexcept;
    // Whether [ptr, ptr + bytes) lies in the device view.
    bool contains(const void *ptr, size_t bytes) const noexcept;
    // The shadow address of a device address: where the provider itself reads and writes.
    void *shadow(const void *device_ptr) const noexcept;

    // First fit, 256-byte aligned like cudaMalloc; null when full.
    void *allocate(size_t bytes);
    // False when ptr is not a live allocation.
    bool release(void *ptr);

private:
    size_t size_ = 0;
    char *device_ = nullptr; // PROT_NONE
    char *shadow_ = nullptr; // PROT_READ | PROT_WRITE
    std::mutex mutex_;
    std::map<size_t, size_t> used_; // offset -> bytes, under mutex_
};

// The one arena of the process. A real runtime's device memory is process-wide too (any
// user of the process sees cudaMalloc's pointers as device memory), so every instance of
// the provider shares it, and so does the compute plugin: a pointer from one instance is
// device memory to all. Created by the first acquire with DISTTRAIN_FAKE_DEVICE_BYTES
// (default 256 MiB: a sparse memfd, pages cost only once touched), unmapped by the last
// release. Throws std::runtime_error when the mapping fails.
FAKEDEVICE_ARENA_API Arena &acquire_arena();
FAKEDEVICE_ARENA_API void release_arena();

} // namespace fakedevice

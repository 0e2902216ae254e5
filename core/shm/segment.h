/* SPDX-License-Identifier: Apache-2.0 */
// A POSIX shared-memory segment (shm_open + mmap), RAII. The owner creates its segment
// with a name unique to the job and maps it read-write; peers map it read-only. The
// name is unlinked as soon as every rank of the host has mapped it, so a killed job
// leaves nothing behind in /dev/shm: the memory lives on only while a mapping does.
#pragma once

#include <cstddef>
#include <string>

namespace dt::shm {

class Segment {
public:
    Segment() = default;
    // Creates name (exclusive: an existing one is an error) of bytes, zero-filled.
    static Segment create(const std::string &name, size_t bytes);
    // Maps an existing segment; bytes must not exceed its size.
    static Segment open(const std::string &name, size_t bytes, bool writable);
    ~Segment();
    Segment(Segment &&other) noexcept;
    Segment &operator=(Segment &&other) noexcept;
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;

    std::byte *data() const { return base_; }
    size_t size() const { return bytes_; }
    const std::string &name() const { return name_; }

    // Removes the name (the mapping stays valid). Idempotent; only the creator unlinks.
    void unlink();

private:
    std::string name_;
    std::byte *base_ = nullptr;
    size_t bytes_ = 0;
    bool owner_ = false;
    bool linked_ = false;
};

} // namespace dt::shm

// SPDX-License-Identifier: Apache-2.0
#include "mock_wire.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ncclmock {

namespace {

// Whether the process is gone: no such pid, or a zombie its parent has not reaped yet.
bool gone(int32_t pid) {
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) return false;
    char line[512] = {0};
    bool zombie = false;
    if (std::fgets(line, sizeof(line), f) != nullptr) {
        const char *close = std::strrchr(line, ')'); // the name may hold spaces
        zombie = close != nullptr && close[1] == ' ' && close[2] == 'Z';
    }
    std::fclose(f);
    return zombie;
}

std::runtime_error sys_error(const std::string &what) {
    return std::runtime_error("mock: " + what + ": " + std::strerror(errno));
}

} // namespace

Wire::Wire(const std::string &name, int nranks, int rank, size_t slot_bytes)
    : name_(name), nranks_(nranks), rank_(rank), slot_bytes_(slot_bytes) {
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
        throw std::runtime_error("mock: " + std::to_string(nranks) + " ranks (at most " +
                                 std::to_string(kMaxRanks) + ")");
    const size_t header = (sizeof(Header) + 4095) & ~size_t(4095);
    mapped_ = header + slot_bytes * static_cast<size_t>(nranks);
    int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0) throw sys_error("shm_open " + name);
    // Every rank sets the same size; the object is sparse, so only what is written costs.
    if (ftruncate(fd, static_cast<off_t>(mapped_)) != 0) {
        close(fd);
        throw sys_error("ftruncate " + name);
    }
    void *p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw sys_error("mmap " + name);
    header_ = static_cast<Header *>(p); // zero-filled by ftruncate: atomics start at 0
    data_ = static_cast<char *>(p) + header;
    header_->pid[rank].store(static_cast<int32_t>(getpid()));
}

Wire::~Wire() {
    if (rank_ == 0) unlink();
    if (header_ != nullptr) munmap(header_, mapped_);
}

bool Wire::all_attached() const {
    for (int r = 0; r < nranks_; ++r)
        if (header_->pid[r].load() == 0) return false;
    return true;
}

void Wire::unlink() {
    if (!unlinked_) shm_unlink(name_.c_str()); // ENOENT: another rank did
    unlinked_ = true;
}

void Wire::mark_aborted() { header_->aborted[rank_].store(1); }

std::string Wire::peer_failure() const {
    for (int r = 0; r < nranks_; ++r) {
        if (r == rank_) continue;
        if (header_->aborted[r].load() != 0)
            return "rank " + std::to_string(r) + " aborted its communicator";
        int32_t pid = header_->pid[r].load();
        if (pid > 0 && gone(pid))
            return "rank " + std::to_string(r) + " (pid " + std::to_string(pid) + ") exited";
    }
    return "";
}

const char *Wire::slot(int r) const { return data_ + slot_bytes_ * static_cast<size_t>(r); }
char *Wire::slot(int r) { return data_ + slot_bytes_ * static_cast<size_t>(r); }
uint64_t *Wire::table(int r) { return header_->slots[r].table; }
const uint64_t *Wire::table(int r) const { return header_->slots[r].table; }

bool Wire::may_post(uint64_t k) const {
    for (int r = 0; r < nranks_; ++r)
        if (header_->slots[r].consumed.load(std::memory_order_acquire) + 1 < k) return false;
    return true;
}

void Wire::post(uint64_t k) { header_->slots[rank_].posted.store(k, std::memory_order_release); }

bool Wire::gathered(uint64_t k) const {
    for (int r = 0; r < nranks_; ++r)
        if (header_->slots[r].posted.load(std::memory_order_acquire) < k) return false;
    return true;
}

void Wire::consumed(uint64_t k) {
    header_->slots[rank_].consumed.store(k, std::memory_order_release);
}

} // namespace ncclmock

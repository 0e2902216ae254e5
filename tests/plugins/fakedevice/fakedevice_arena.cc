// SPDX-License-Identifier: Apache-2.0
#include "fakedevice_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace fakedevice {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kDefaultBytes = size_t(256) << 20;

size_t arena_bytes()
{
    const char *v = std::getenv("DISTTRAIN_FAKE_DEVICE_BYTES");
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : kDefaultBytes;
}

std::runtime_error failure(const char *what)
{
    return std::runtime_error(std::string("fakedevice: ") + what + " failed: " +
                              std::strerror(errno));
}

std::mutex g_arena_mutex;
std::unique_ptr<Arena> g_arena; // under g_arena_mutex
int g_arena_users = 0;          // under g_arena_mutex

} // namespace

Arena::Arena(size_t bytes)
{
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_ = (bytes + page - 1) / page * page;
    int fd = memfd_create("dt-fakedevice", MFD_CLOEXEC);
    if (fd < 0)
        throw failure("memfd_create");
    if (ftruncate(fd, static_cast<off_t>(size_)) != 0) {
        close(fd);
        throw failure("ftruncate");
    }
    void *dev = mmap(nullptr, size_, PROT_NONE, MAP_SHARED, fd, 0);
    void *sh = dev == MAP_FAILED ? MAP_FAILED
                                 : mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd); // the mappings keep the memory
    errno = saved;
    if (dev == MAP_FAILED)
        throw failure("mmap of the device view");
    if (sh == MAP_FAILED) {
        munmap(dev, size_);
        throw failure("mmap of the shadow view");
    }
    device_ = static_cast<char *>(dev);
    shadow_ = static_cast<char *>(sh);
}

Arena::~Arena()
{
    munmap(device_, size_);
    munmap(shadow_, size_);
}

bool Arena::contains(const void *ptr) const noexcept
{
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto base = reinterpret_cast<uintptr_t>(device_);
    return p >= base && p < base + size_;
}

bool Arena::contains(const void *ptr, size_t bytes) const noexcept
{
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto base = reinterpret_cast<uintptr_t>(device_);
    return p >= base && bytes <= size_ && p - base <= size_ - bytes;
}

void *Arena::shadow(const void *device_ptr) const noexcept
{
    return shadow_ + (static_cast<const char *>(device_ptr) - device_);
}

void *Arena::allocate(size_t bytes)
{
    const size_t want = ((bytes == 0 ? 1 : bytes) + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mutex_);
    size_t at = 0;
    for (const auto &[offset, len] : used_) {
        if (offset - at >= want)
            break;
        at = offset + (len + kAlign - 1) / kAlign * kAlign;
    }
    if (at > size_ || size_ - at < want)
        return nullptr;
    used_[at] = bytes;
    return device_ + at;
}

bool Arena::release(void *ptr)
{
    if (!contains(ptr))
        return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return used_.erase(static_cast<size_t>(static_cast<char *>(ptr) - device_)) == 1;
}

Arena &acquire_arena()
{
    std::lock_guard<std::mutex> lock(g_arena_mutex);
    if (!g_arena)
        g_arena = std::make_unique<Arena>(arena_bytes());
    ++g_arena_users;
    return *g_arena;
}

void release_arena()
{
    std::lock_guard<std::mutex> lock(g_arena_mutex);
    if (--g_arena_users == 0)
        g_arena.reset();
}

} // namespace fakedevice

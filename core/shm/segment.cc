// SPDX-License-Identifier: Apache-2.0
#include "shm/segment.h"

#include "runtime/error.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dt::shm {

namespace {

// Closes the descriptor on every path: the mapping keeps the memory alive on its own.
struct Fd {
    int fd;
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

std::byte *map(int fd, size_t bytes, bool writable, const std::string &name)
{
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    void *p = ::mmap(nullptr, bytes, prot, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        throw_error(DT_ERR_NO_MEMORY, "shared memory: cannot map '", name, "' (", bytes,
                    " bytes): ", std::strerror(errno),
                    "; set DISTTRAIN_SHM=0 to run without shared memory");
    return static_cast<std::byte *>(p);
}

} // namespace

Segment Segment::create(const std::string &name, size_t bytes)
{
    Fd f{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
    if (f.fd < 0)
        throw_error(DT_ERR_NO_MEMORY, "shared memory: cannot create '", name,
                    "': ", std::strerror(errno), "; check that /dev/shm is mounted and "
                    "writable, or set DISTTRAIN_SHM=0");
    Segment s;
    s.name_ = name;
    s.owner_ = true;
    s.linked_ = true;
    if (::ftruncate(f.fd, static_cast<off_t>(bytes)) != 0) {
        int err = errno;
        s.unlink();
        throw_error(DT_ERR_NO_MEMORY, "shared memory: cannot size '", name, "' to ", bytes,
                    " bytes: ", std::strerror(err),
                    "; /dev/shm may be full (df /dev/shm), or set DISTTRAIN_SHM=0");
    }
    try {
        s.base_ = map(f.fd, bytes, true, name);
    } catch (...) {
        s.unlink();
        throw;
    }
    s.bytes_ = bytes;
    return s;
}

Segment Segment::open(const std::string &name, size_t bytes, bool writable)
{
    Fd f{::shm_open(name.c_str(), writable ? O_RDWR : O_RDONLY, 0)};
    if (f.fd < 0)
        throw_error(DT_ERR_NO_MEMORY, "shared memory: cannot open peer segment '", name,
                    "': ", std::strerror(errno),
                    "; are the ranks really on one host? (DISTTRAIN_LOCAL_SIZE)");
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes)
        throw_error(DT_ERR_PROTOCOL, "shared memory: peer segment '", name, "' holds ",
                    st.st_size, " bytes, expected ", bytes);
    Segment s;
    s.name_ = name;
    s.base_ = map(f.fd, bytes, writable, name);
    s.bytes_ = bytes;
    return s;
}

Segment::~Segment()
{
    unlink();
    if (base_ != nullptr)
        ::munmap(base_, bytes_);
}

Segment::Segment(Segment &&other) noexcept
    : name_(std::move(other.name_)), base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)), owner_(std::exchange(other.owner_, false)),
      linked_(std::exchange(other.linked_, false))
{
}

Segment &Segment::operator=(Segment &&other) noexcept
{
    if (this != &other) {
        Segment old(std::move(*this));
        name_ = std::move(other.name_);
        base_ = std::exchange(other.base_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        owner_ = std::exchange(other.owner_, false);
        linked_ = std::exchange(other.linked_, false);
    }
    return *this;
}

void Segment::unlink()
{
    if (owner_ && linked_) {
        ::shm_unlink(name_.c_str());
        linked_ = false;
    }
}

} // namespace dt::shm

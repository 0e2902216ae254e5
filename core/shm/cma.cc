// SPDX-License-Identifier: Apache-2.0
#include "shm/cma.h"

#include <cerrno>
#include <cstring>

#include <sys/uio.h>

namespace dt::shm::cma {

int read(pid_t pid, void *local, uint64_t remote, size_t bytes)
{
    auto *dst = static_cast<std::byte *>(local);
    while (bytes > 0) {
        iovec l{dst, bytes};
        iovec r{reinterpret_cast<void *>(remote), bytes};
        ssize_t got = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got < 0)
            return errno;
        if (got == 0)
            return EFAULT; // nothing copied and no error: never loop forever
        dst += got;
        remote += static_cast<uint64_t>(got);
        bytes -= static_cast<size_t>(got);
    }
    return 0;
}

std::string describe(int error)
{
    const char *name = ::strerrorname_np(error);
    std::string s = name != nullptr ? name : "errno " + std::to_string(error);
    return s + " (" + std::strerror(error) + ")";
}

} // namespace dt::shm::cma

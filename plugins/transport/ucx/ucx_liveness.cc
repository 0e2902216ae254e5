// SPDX-License-Identifier: Apache-2.0
#include "ucx_liveness.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace dt::ucx {

Liveness::~Liveness() {
    for (const pollfd &p : fds_) ::close(p.fd);
}

std::string Liveness::self() {
    struct stat ns {};
    if (::stat("/proc/self/ns/pid", &ns) != 0) return "";
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%llu:%llu/%ld",
                  static_cast<unsigned long long>(ns.st_dev),
                  static_cast<unsigned long long>(ns.st_ino), static_cast<long>(::getpid()));
    return buf;
}

void Liveness::watch(int peer, const std::string &theirs) {
    const std::string mine = self();
    const size_t slash = mine.find('/');
    if (mine.empty() || theirs == mine || theirs.size() <= slash + 1 ||
        theirs.compare(0, slash + 1, mine, 0, slash + 1) != 0) {
        return;
    }
    const long pid = std::strtol(theirs.c_str() + slash + 1, nullptr, 10);
    int fd = -1;
#ifdef SYS_pidfd_open
    // pidfd_open, not kill(pid, 0): a pidfd never stands for a later process that
    // reuses the pid. Kernels before 5.3 have none; UCX's keepalive is left there.
    if (pid > 0) fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
#endif
    if (fd < 0) return;
    fds_.push_back(pollfd{fd, POLLIN, 0});
    peers_.push_back(peer);
}

std::vector<int> Liveness::exited() {
    std::vector<int> gone;
    if (fds_.empty() || ::poll(fds_.data(), fds_.size(), 0) <= 0) return gone;
    for (size_t i = fds_.size(); i-- > 0;) {
        if (fds_[i].revents == 0) continue;
        gone.push_back(peers_[i]);
        ::close(fds_[i].fd);
        fds_.erase(fds_.begin() + static_cast<std::ptrdiff_t>(i));
        peers_.erase(peers_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return gone;
}

} // namespace dt::ucx

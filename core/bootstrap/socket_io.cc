// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/socket_io.h"

#include "bootstrap/net_address.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt::bootstrap {

Fd &Fd::operator=(Fd &&other) noexcept
{
    if (this != &other)
        reset(other.release());
    return *this;
}

void Fd::reset(int fd)
{
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = fd;
}

Deadline Deadline::after(std::chrono::milliseconds timeout)
{
    // Beyond ~10 years is "forever" in practice and keeps the addition below in range.
    constexpr auto kForever = std::chrono::hours(24 * 365 * 10);
    if (timeout.count() < 0 || timeout > kForever)
        return never();
    Deadline d;
    d.at_ = Clock::now() + timeout;
    return d;
}

Deadline Deadline::earliest(const Deadline &a, const Deadline &b)
{
    if (a.is_never())
        return b;
    if (b.is_never())
        return a;
    return *a.at_ <= *b.at_ ? a : b;
}

int Deadline::poll_ms() const
{
    if (!at_)
        return -1;
    auto left = *at_ - Clock::now();
    if (left <= Clock::duration::zero())
        return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

std::string IoResult::describe() const
{
    switch (status) {
    case IoStatus::ok: return "ok";
    case IoStatus::eof: return "the peer closed the connection";
    case IoStatus::timeout: return "timed out";
    case IoStatus::woken: return "interrupted by shutdown";
    case IoStatus::error: return std::strerror(err);
    }
    return "unknown";
}

namespace {

// Waits until fd is ready for `events`, the deadline passes or wake_fd becomes readable.
IoResult wait_ready(int fd, short events, const Deadline &deadline, int wake_fd)
{
    for (;;) {
        pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
        int n = ::poll(fds, wake_fd >= 0 ? 2 : 1, deadline.poll_ms());
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return {IoStatus::error, errno};
        }
        if (wake_fd >= 0 && (fds[1].revents & POLLIN))
            return {IoStatus::woken, 0};
        // Errors and hang-ups surface through the following recv/send call.
        if (fds[0].revents != 0)
            return {};
        if (deadline.expired())
            return {IoStatus::timeout, 0};
    }
}

} // namespace

IoResult read_full(int fd, void *buf, size_t len, const Deadline &deadline, int wake_fd)
{
    auto *p = static_cast<char *>(buf);
    while (len > 0) {
        IoResult ready = wait_ready(fd, POLLIN, deadline, wake_fd);
        if (!ready.ok())
            return ready;
        ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
        if (n == 0)
            return {IoStatus::eof, 0};
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            if (errno == ECONNRESET)
                return {IoStatus::eof, 0};
            return {IoStatus::error, errno};
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
    return {};
}

IoResult write_full(int fd, const void *buf, size_t len, const Deadline &deadline,
                    int wake_fd)
{
    const auto *p = static_cast<const char *>(buf);
    while (len > 0) {
        IoResult ready = wait_ready(fd, POLLOUT, deadline, wake_fd);
        if (!ready.ok())
            return ready;
        ssize_t n = ::send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            if (errno == EPIPE || errno == ECONNRESET)
                return {IoStatus::eof, 0};
            return {IoStatus::error, errno};
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
    return {};
}

bool peer_closed(int fd)
{
    pollfd p{fd, POLLRDHUP, 0};
    int n = ::poll(&p, 1, 0);
    return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

std::string peer_name(int fd)
{
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0)
        return "?";
    return format_sockaddr(reinterpret_cast<const sockaddr *>(&ss), len);
}

} // namespace dt::bootstrap

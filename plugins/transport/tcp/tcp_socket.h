/* SPDX-License-Identifier: Apache-2.0 */
// Socket helpers: an owning file descriptor and the options every data connection gets.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <utility>

namespace dt::tcp {

// Owns one file descriptor; closing it also removes it from any epoll set.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    void reset();

private:
    int fd_ = -1;
};

// O_NONBLOCK; throws TcpError(DTP_ERR_TRANSPORT) on failure.
void set_nonblocking(int fd);

// TCP_NODELAY (small frames such as barrier messages must not wait for Nagle) and, when
// bufsize > 0, SO_SNDBUF/SO_RCVBUF. bufsize 0 keeps the kernel's autotuning.
void tune_data_socket(int fd, int bufsize);

// Whether the remote address of a connected socket is a loopback address (127.0.0.0/8,
// ::1 or IPv4-mapped 127.x): the peer runs on this host.
bool peer_is_loopback(int fd);

// TCP_CONGESTION; returns 0 or the errno (ENOENT: not available, EPERM: not allowed for
// this user, see net.ipv4.tcp_allowed_congestion_control).
int set_congestion_control(int fd, const std::string &name);

// "ip:port" ("[ip6]:port") of a socket address.
std::string format_sockaddr(const sockaddr *sa, socklen_t len);
// The remote address of a connected socket, or "unknown address".
std::string peer_name(int fd);

} // namespace dt::tcp

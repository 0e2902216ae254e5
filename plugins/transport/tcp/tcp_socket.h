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

// "ip:port" ("[ip6]:port") of a socket address.
std::string format_sockaddr(const sockaddr *sa, socklen_t len);
// The remote address of a connected socket, or "unknown address".
std::string peer_name(int fd);

} // namespace dt::tcp

// SPDX-License-Identifier: Apache-2.0
#include "tcp_socket.h"

#include "tcp_error.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>

namespace dt::tcp {

void Fd::reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void set_nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: cannot make a socket non-blocking");
    }
}

void tune_data_socket(int fd, int bufsize) {
    int one = 1;
    // Not fatal: a socket without NODELAY or big buffers still works, only slower.
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (bufsize > 0) {
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
        (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
    }
}

bool peer_is_loopback(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return false;
    if (ss.ss_family == AF_INET) {
        auto *in = reinterpret_cast<const sockaddr_in *>(&ss);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const in6_addr &a = reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
    }
    return false;
}

int set_congestion_control(int fd, const std::string &name) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) != 0) {
        return errno;
    }
    return 0;
}

std::string format_sockaddr(const sockaddr *sa, socklen_t len) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
        auto *in = reinterpret_cast<const sockaddr_in *>(sa);
        ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
        auto *in6 = reinterpret_cast<const sockaddr_in6 *>(sa);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        std::string out = "[";
        out += ip;
        out += "]:";
        out += std::to_string(ntohs(in6->sin6_port));
        return out;
    }
    return "unknown address";
}

std::string peer_name(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) {
        return "unknown address";
    }
    return format_sockaddr(reinterpret_cast<sockaddr *>(&ss), len);
}

} // namespace dt::tcp

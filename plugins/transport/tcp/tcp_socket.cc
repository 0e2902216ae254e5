#include "tcp_socket.h"

#include "tcp_error.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

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

// SPDX-License-Identifier: Apache-2.0
#include "tcp_connect.h"

#include "tcp_error.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace dt::tcp {
namespace {

// Connections still authenticating at once; more are refused so that a flood of stray
// connections cannot grow memory or starve the job.
constexpr size_t kMaxPendingHandshakes = 64;
constexpr int kMaxBackoffMs = 500;
// How often init looks again for an address a peer has not published yet.
constexpr int kStorePollMs = 10;

int ms_until(Clock::time_point t) {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(d, 0, 1 << 30));
}

} // namespace

Mesh::Mesh(const Host &host, const Config &config, int rank, int size, const SockAddr &bind_addr,
           int epoll_fd)
    : host_(host), config_(config), rank_(rank), size_(size), epoll_fd_(epoll_fd),
      lower_(static_cast<size_t>(rank)), connected_(static_cast<size_t>(size), false) {
    listener_ = Fd(::socket(bind_addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener_.valid()) throw_errno(DTP_ERR_TRANSPORT, "tcp: cannot create a socket");
    int one = 1;
    (void)::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    // Accepted sockets inherit buffer sizes, which must be set before the handshake
    // decides the window scale.
    tune_data_socket(listener_.get(), config.sockbuf);
    if (::bind(listener_.get(), bind_addr.sa(), bind_addr.len) != 0) {
        int err = errno;
        throw TcpError(DTP_ERR_INVALID_CONFIG,
                       errno_text("tcp: cannot listen on " + bind_addr.str(), err) +
                           "; DISTTRAIN_TCP_ADDR / DISTTRAIN_TCP_IFNAME must name an address "
                           "of this host (available: " +
                           describe_interfaces() + ")");
    }
    if (::listen(listener_.get(), SOMAXCONN) != 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: listen failed");
    }
    SockAddr bound;
    bound.len = sizeof(bound.ss);
    if (::getsockname(listener_.get(), bound.sa(), &bound.len) != 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: getsockname failed");
    }
    listen_addr_ = bound.str();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = kKeyListener;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener_.get(), &ev) != 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: epoll_ctl failed");
    }
    std::string key = "addr/" + std::to_string(rank);
    int32_t rc = host_.store_set(key, listen_addr_);
    if (rc != DTP_OK) {
        throw TcpError(rc, "tcp: rank " + std::to_string(rank) + " could not publish its "
                           "address in the store (key " + key + ")");
    }
    host_.log(DT_LOG_DEBUG, "listening on " + listen_addr_);
}

void Mesh::check_given_up() {
    auto now = Clock::now();
    if (now < next_check_) return;
    next_check_ = now + std::chrono::milliseconds(10);
    // Once the job gives up on this transport, the host fails every store read (abandon
    // notice, runtime/transport_choice.h). Waiting on sockets alone the mesh reads nothing,
    // so it reads a key nobody writes, without waiting, to hear of it.
    std::string ignored;
    int32_t rc = host_.store_get("given_up", &ignored, 1);
    if (rc == DTP_OK || rc == DTP_ERR_TIMEOUT) return;
    read_failed(rc, "lost the store while connecting to its peers");
}

void Mesh::read_failed(int32_t rc, const std::string &what) const {
    // Every read fails with DTP_ERR_CONNECT once the job gives up on this transport.
    throw TcpError(rc, "tcp: rank " + std::to_string(rank_) + " " +
                           (rc == DTP_ERR_CONNECT
                                ? "gave up connecting: the job gave up on this transport"
                                : what) +
                           "; still missing: " + missing());
}

void Mesh::connect_step(int wait_ms) {
    fetch_addresses(wait_ms);
    auto now = Clock::now();
    for (int p = 0; p < rank_; ++p) {
        Lower &l = lower_[static_cast<size_t>(p)];
        if (connected_[static_cast<size_t>(p)] || !l.have_addr || l.handshake != 0) continue;
        if (l.retry_at <= now) start_connect(p);
    }
}

void Mesh::fetch_addresses(int wait_ms) {
    bool first = true;
    for (int p = 0; p < rank_; ++p) {
        Lower &l = lower_[static_cast<size_t>(p)];
        if (l.have_addr) continue;
        std::string key = "addr/" + std::to_string(p);
        // Only the first lookup waits: the others are most likely there already.
        int32_t rc = host_.store_get(key, &l.addr_text, first ? wait_ms : 0);
        first = false;
        if (rc == DTP_ERR_TIMEOUT) continue;
        if (rc != DTP_OK) {
            read_failed(rc, "could not read the address of rank " + std::to_string(p) + " (" +
                                key + ") from the store");
        }
        if (!parse_endpoint(l.addr_text, &l.addr)) {
            throw TcpError(DTP_ERR_PROTOCOL, "tcp: rank " + std::to_string(p) +
                                                 " published an unreadable address '" +
                                                 l.addr_text + "' under " + key);
        }
        l.have_addr = true;
    }
}

void Mesh::start_connect(int peer) {
    Lower &l = lower_[static_cast<size_t>(peer)];
    try {
        auto deadline = Clock::now() + std::chrono::milliseconds(config_.handshake_timeout_ms);
        add(Handshake::connect(host_, rank_, peer, l.addr, config_.sockbuf, deadline));
        l.handshake = kKeyHandshake | (next_id_ - 1);
    } catch (const TcpError &e) {
        connector_failed(peer, e.what(), false);
    }
}

void Mesh::add(Handshake h) {
    uint64_t key = kKeyHandshake | next_id_++;
    epoll_event ev{};
    // Registration reports a socket that is ready already, so no event is missed.
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = key;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, h.fd(), &ev) != 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: epoll_ctl failed");
    }
    handshakes_.emplace(key, std::move(h));
}

void Mesh::on_listener() {
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof(ss);
        Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr *>(&ss), &len,
                        SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.valid()) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                host_.log(DT_LOG_WARN, errno_text("accept failed", errno));
            }
            return;
        }
        std::string from = format_sockaddr(reinterpret_cast<sockaddr *>(&ss), len);
        if (handshakes_.size() >= kMaxPendingHandshakes) {
            host_.log(DT_LOG_WARN, "refused connection from " + from +
                                       ": too many connections are authenticating");
            continue;
        }
        tune_data_socket(fd.get(), 0); // buffers are inherited from the listener
        auto deadline = Clock::now() + std::chrono::milliseconds(config_.handshake_timeout_ms);
        add(Handshake::accept(host_, std::move(fd), rank_, size_, deadline));
    }
}

std::optional<Established> Mesh::on_handshake(uint64_t key) {
    auto it = handshakes_.find(key);
    if (it == handshakes_.end()) return std::nullopt; // already finished or refused
    Handshake &h = it->second;
    Handshake::Result r = h.step();
    if (r == Handshake::Result::pending) return std::nullopt;
    Handshake done = std::move(h);
    handshakes_.erase(it);
    if (r == Handshake::Result::failed) {
        if (done.is_acceptor()) refused(done, done.error());
        else connector_failed(done.peer_rank(), done.error(), done.auth_failed());
        return std::nullopt;
    }
    int peer = done.peer_rank();
    if (done.is_acceptor() && connected_[static_cast<size_t>(peer)]) {
        refused(done, "rank " + std::to_string(peer) + " is already connected");
        return std::nullopt;
    }
    if (!done.is_acceptor()) lower_[static_cast<size_t>(peer)].handshake = 0;
    connected_[static_cast<size_t>(peer)] = true;
    ++connected_count_;
    return Established{peer, done.release_fd(), done.peer_addr()};
}

void Mesh::refused(const Handshake &h, const std::string &why) {
    host_.log(DT_LOG_WARN, "refused connection from " + h.peer_addr() + ": " + why);
}

void Mesh::connector_failed(int peer, const std::string &why, bool fatal) {
    Lower &l = lower_[static_cast<size_t>(peer)];
    l.handshake = 0;
    l.last_error = why;
    std::string text = "rank " + std::to_string(peer) + " at " + l.addr_text + " " + why;
    if (fatal) throw TcpError(DTP_ERR_AUTH, "tcp: rank " + std::to_string(rank_) + ": " + text);
    host_.log(DT_LOG_DEBUG, "connecting to " + text + "; retrying");
    l.retry_at = Clock::now() + std::chrono::milliseconds(l.backoff_ms);
    l.backoff_ms = std::min(l.backoff_ms * 2, kMaxBackoffMs);
}

void Mesh::expire() {
    auto now = Clock::now();
    for (auto it = handshakes_.begin(); it != handshakes_.end();) {
        if (it->second.deadline() > now) {
            ++it;
            continue;
        }
        Handshake h = std::move(it->second);
        it = handshakes_.erase(it);
        std::string why = "no complete handshake within " +
                          std::to_string(config_.handshake_timeout_ms) + " ms";
        if (h.is_acceptor()) refused(h, why);
        else connector_failed(h.peer_rank(), why, false);
    }
}

int Mesh::next_wakeup_ms(int cap_ms) const {
    int wait = cap_ms < 0 ? (1 << 30) : cap_ms;
    for (const auto &[key, h] : handshakes_) wait = std::min(wait, ms_until(h.deadline()));
    for (int p = 0; p < rank_; ++p) {
        const Lower &l = lower_[static_cast<size_t>(p)];
        if (connected_[static_cast<size_t>(p)]) continue;
        if (!l.have_addr) wait = std::min(wait, kStorePollMs);
        else if (l.handshake == 0) wait = std::min(wait, ms_until(l.retry_at));
    }
    return cap_ms < 0 && wait == (1 << 30) ? -1 : wait;
}

std::string Mesh::missing() const {
    std::string out;
    for (int p = 0; p < size_; ++p) {
        if (p == rank_ || connected_[static_cast<size_t>(p)]) continue;
        std::string item = "rank " + std::to_string(p);
        if (p > rank_) {
            item += " (has not connected to this rank)";
        } else {
            const Lower &l = lower_[static_cast<size_t>(p)];
            if (!l.have_addr) item += " (no address in the store: has it started?)";
            else if (!l.last_error.empty()) item += " at " + l.addr_text + " (" + l.last_error + ")";
            else item += " at " + l.addr_text + " (connecting)";
        }
        out += (out.empty() ? "" : ", ") + item;
    }
    return out;
}

} // namespace dt::tcp

// SPDX-License-Identifier: Apache-2.0
#include "tcp_context.h"

#include "tcp_address.h"
#include "tcp_default_address.h"
#include "tcp_error.h"
#include "tcp_request.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dt::tcp {
namespace {

constexpr int kMaxEvents = 64;

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

} // namespace

Context::Context(const dt_transport_init_args_t &args)
    : host_(args.host, args.services), config_(Config::from_env()), rank_(args.rank),
      size_(args.size), self_(host_, args.rank) {
    // Checked even for one rank, so a typo fails in a small test as it would at scale.
    AddressChoice choice = choose_bind_address(config_, args.size, args.local_size,
                                               host_.store_address());
    const SockAddr &bind_addr = choice.addr;
    epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) throw_errno(DTP_ERR_TRANSPORT, "tcp: epoll_create1 failed");
    peers_.resize(static_cast<size_t>(size_));
    if (size_ == 1) return;
    mesh_ = std::make_unique<Mesh>(host_, config_, rank_, size_, bind_addr, epoll_.get());
    // Which network the job's traffic takes is the first thing to check when peers do not
    // connect, so it is said with the reason.
    host_.log(DT_LOG_INFO, "listening on " + mesh_->listen_addr() + ": " + choice.why);
    connect_mesh(args.timeout_ms);
    host_.log(DT_LOG_DEBUG, "connected to all " + std::to_string(size_ - 1) +
                                " peers; listening on " + mesh_->listen_addr());
}

Context::~Context() {
    abort();
}

void Context::connect_mesh(int32_t timeout_ms) {
    auto start = Clock::now();
    auto deadline = timeout_ms > 0 ? start + std::chrono::milliseconds(timeout_ms)
                                   : Clock::time_point::max();
    while (!mesh_->complete()) {
        int left = -1;
        if (timeout_ms > 0) {
            auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (d.count() <= 0) {
                throw TcpError(DTP_ERR_TIMEOUT,
                               "tcp: rank " + std::to_string(rank_) + " timed out after " +
                                   std::to_string(timeout_ms) +
                                   " ms connecting to its peers; missing: " + mesh_->missing() +
                                   ". Check that every rank started and that the address it "
                                   "listens on (DISTTRAIN_TCP_ADDR / DISTTRAIN_TCP_IFNAME) is "
                                   "reachable from the others");
            }
            left = static_cast<int>(std::min<long long>(d.count(), 1 << 30));
        }
        mesh_->check_given_up();
        mesh_->connect_step(std::min(left < 0 ? 10 : left, 10));
        // Short waits: check_given_up above must run often for a job that gives up.
        wait_events(mesh_->next_wakeup_ms(left < 0 ? 10 : std::min(left, 10)));
        mesh_->expire();
    }
}

void Context::wait_events(int timeout_ms) {
    epoll_event events[kMaxEvents];
    int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, timeout_ms);
    if (n < 0) {
        if (errno == EINTR) return;
        throw_errno(DTP_ERR_TRANSPORT, "tcp: epoll_wait failed");
    }
    for (int i = 0; i < n; ++i) {
        uint64_t key = events[i].data.u64;
        uint64_t kind = key & kKeyKindMask;
        if (kind == kKeyEndpoint) {
            auto &ep = peers_[static_cast<size_t>(key & ~kKeyKindMask)];
            if (ep) ep->on_event(events[i].events);
        } else if (mesh_ && kind == kKeyListener) {
            mesh_->on_listener();
        } else if (mesh_ && kind == kKeyHandshake) {
            if (auto e = mesh_->on_handshake(key)) add_endpoint(std::move(*e));
        }
    }
}

void Context::add_endpoint(Established e) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = kKeyEndpoint | static_cast<uint64_t>(e.rank);
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, e.fd.get(), &ev) != 0) {
        throw_errno(DTP_ERR_TRANSPORT, "tcp: epoll_ctl failed");
    }
    host_.log(DT_LOG_DEBUG, "connected to " + rank_text(e.rank) + " (" + e.addr + ")");
    choose_congestion_control(e);
    peers_[static_cast<size_t>(e.rank)] =
        std::make_unique<Endpoint>(host_, config_, rank_, e.rank, std::move(e.fd), e.addr,
                                   send_scratch_);
    // Edge-triggered: data that came with the handshake raised no new edge.
    peers_[static_cast<size_t>(e.rank)]->pump();
}

void Context::choose_congestion_control(const Established &e) {
    // Between ranks of one host there is no network to be fair to, and the host's
    // default may pace (bbr does, with a timer per burst): on loopback that pacing and
    // the reordering it causes made allreduces of 16-64 MiB 1.5x slower than reno,
    // which sends as fast as the peer's window allows. Other hosts keep the default
    // their administrator chose, unless DISTTRAIN_TCP_CONGESTION says otherwise.
    std::string name = config_.congestion;
    if (name == "system") return;
    if (name.empty()) {
        if (!peer_is_loopback(e.fd.get())) return;
        name = "reno";
    }
    int err = set_congestion_control(e.fd.get(), name);
    if (err != 0) {
        // Not fatal: the connection works with the default algorithm, only maybe slower.
        host_.log(config_.congestion.empty() ? DT_LOG_DEBUG : DT_LOG_WARN,
                  "cannot use congestion control '" + name + "' towards " + rank_text(e.rank) +
                      ": " + std::strerror(err) +
                      " (DISTTRAIN_TCP_CONGESTION; allowed: "
                      "/proc/sys/net/ipv4/tcp_allowed_congestion_control)");
        return;
    }
    host_.log(DT_LOG_DEBUG, "congestion control " + name + " towards " + rank_text(e.rank));
}

void Context::check_peer(int32_t peer, const void *buf, size_t len,
                         const dt_transport_request_t *req) const {
    if (req == nullptr) throw TcpError(DTP_ERR_INVALID_ARGUMENT, "tcp: request is NULL");
    if (peer < 0 || peer >= size_) {
        throw TcpError(DTP_ERR_INVALID_ARGUMENT,
                       "tcp: peer " + std::to_string(peer) + " is not a rank of this job "
                       "(size " + std::to_string(size_) + ")");
    }
    if (buf == nullptr && len > 0) {
        throw TcpError(DTP_ERR_INVALID_ARGUMENT, "tcp: buffer is NULL but length is " +
                                                     std::to_string(len));
    }
}

int32_t Context::isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_peer(peer, buf, len, req);
    if (peer == rank_) return self_.isend(tag, buf, len, req);
    return peers_[static_cast<size_t>(peer)]->isend(tag, buf, len, req);
}

int32_t Context::irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_peer(peer, buf, len, req);
    if (peer == rank_) return self_.irecv(tag, buf, len, req);
    return peers_[static_cast<size_t>(peer)]->irecv(tag, buf, len, req);
}

int32_t Context::progress(int32_t timeout_ms) {
    if (mesh_) timeout_ms = mesh_->next_wakeup_ms(timeout_ms);
    wait_events(timeout_ms);
    if (mesh_) mesh_->expire();
    return DTP_OK;
}

void Context::close_gracefully(std::chrono::milliseconds linger) {
    // close() with bytes unread in our receive queue makes the kernel reset the
    // connection, and the peer's kernel may then drop data its reader has not taken yet
    // (the last reply of a collective, say). So: finish our sends, half-close, read what
    // the peer still sends until it closes too or the linger time passes, then close.
    if (aborted_ || size_ == 1) return;
    auto deadline = Clock::now() + linger;
    auto sending = [&] {
        for (auto &ep : peers_)
            if (ep && ep->sending()) return true;
        return false;
    };
    while (sending() && Clock::now() < deadline) progress(1);
    for (auto &ep : peers_)
        if (ep) ep->shutdown_writes();
    std::vector<pollfd> fds;
    for (;;) {
        fds.clear();
        for (auto &ep : peers_)
            if (ep && !ep->drain()) fds.push_back({ep->fd(), POLLIN, 0});
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (fds.empty() || left.count() <= 0) break;
        ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    }
}

void Context::abort() {
    if (aborted_) return;
    aborted_ = true;
    std::string why = "tcp transport of rank " + std::to_string(rank_) + " was aborted";
    for (auto &ep : peers_) {
        if (ep) ep->fail(DTP_ERR_ABORTED, why, DT_LOG_DEBUG);
    }
    self_.fail_all(DTP_ERR_ABORTED);
    mesh_.reset(); // closes the listener and any connection still authenticating
}

} // namespace dt::tcp

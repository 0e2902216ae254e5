// SPDX-License-Identifier: Apache-2.0
// StoreServer: one accept thread plus one thread per connection. Ranks keep a single
// connection each for the whole job, so the thread count stays at the job's size, and a
// blocking get() is just a condition-variable wait on its own thread. Shutdown writes an
// eventfd that every poll() in the server also watches, so destruction never waits on a
// peer.
#include "bootstrap/store.h"

#include "bootstrap/net_address.h"
#include "bootstrap/store_handshake.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_state.h"
#include "telemetry/log.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace dt::bootstrap {

namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// Once a frame's length has arrived its body must follow within this.
constexpr auto kBodyTimeout = std::chrono::seconds(60);
constexpr size_t kMaxConnections = 4096;
constexpr auto kReapInterval = std::chrono::milliseconds(500);

Deadline deadline_from_ms(uint64_t ms)
{
    if (ms == proto::kNoTimeout || ms > uint64_t{INT64_MAX})
        return Deadline::never();
    return Deadline::after(std::chrono::milliseconds(static_cast<int64_t>(ms)));
}

} // namespace

struct StoreServer::Impl {
    struct Connection {
        std::thread thread;
        std::atomic<bool> done{false};
    };

    Auth auth;
    Fd listener;
    Fd wake; // eventfd, written once at shutdown and never drained
    std::string address;
    std::atomic<uint64_t> refused{0};
    std::mutex token_refusals_mu;
    TokenRefusals token_refusals;
    std::atomic<bool> stopping{false};
    StoreState state;
    std::mutex conns_mu;
    std::list<Connection> conns;
    std::thread acceptor;

    explicit Impl(Auth a) : auth(std::move(a)) {}

    void listen_on(const std::string &bind_addr);
    void accept_loop();
    void reap(bool all);
    void serve(Fd fd);
    bool authenticate(int fd, const std::string &peer);
    void note_token_refusal(const std::string &peer);
    proto::Reply execute(const proto::Request &req, int fd);
    void stop();
};

void StoreServer::Impl::listen_on(const std::string &bind_addr)
{
    HostPort hp = parse_host_port("store bind address", bind_addr);
    std::string last_error = "no address to bind";
    for (const SockAddr &sa : resolve("store bind address", hp, true)) {
        Fd s(::socket(sa.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!s.valid()) {
            last_error = std::strerror(errno);
            continue;
        }
        int one = 1, zero = 0;
        ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        // "[::]" serves IPv4 clients too.
        if (sa.family == AF_INET6 && is_wildcard(sa))
            ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (::bind(s.get(), sa.get(), sa.len) != 0 || ::listen(s.get(), 1024) != 0) {
            last_error = std::strerror(errno);
            continue;
        }
        sockaddr_storage bound{};
        socklen_t len = sizeof bound;
        ::getsockname(s.get(), reinterpret_cast<sockaddr *>(&bound), &len);
        SockAddr b;
        b.storage = bound;
        b.len = len;
        b.family = bound.ss_family;
        if (is_wildcard(b)) {
            uint16_t port = ntohs(b.family == AF_INET
                                      ? reinterpret_cast<sockaddr_in *>(&bound)->sin_port
                                      : reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port);
            address = HostPort{reachable_host(), port}.str();
        } else {
            address = format_sockaddr(b.get(), b.len);
        }
        listener = std::move(s);
        return;
    }
    throw_error(DT_ERR_CONNECT, "the rendezvous store cannot listen on ", bind_addr, ": ",
                last_error, "; choose a free port, or port 0 for any free port");
}

void StoreServer::Impl::reap(bool all)
{
    std::lock_guard lock(conns_mu);
    for (auto it = conns.begin(); it != conns.end();) {
        if (all || it->done.load()) {
            it->thread.join();
            it = conns.erase(it);
        } else {
            ++it;
        }
    }
}

void StoreServer::Impl::accept_loop()
{
    while (!stopping.load()) {
        pollfd fds[2] = {{listener.get(), POLLIN, 0}, {wake.get(), POLLIN, 0}};
        int n = ::poll(fds, 2, static_cast<int>(kReapInterval.count()));
        reap(false);
        if (n < 0 && errno != EINTR) {
            DT_LOG(error, "store", "poll on the listening socket failed: ", std::strerror(errno));
            std::this_thread::sleep_for(kReapInterval);
            continue;
        }
        if (n <= 0 || (fds[1].revents & POLLIN) || !(fds[0].revents & POLLIN))
            continue;
        Fd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!client.valid()) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                DT_LOG(warn, "store", "cannot accept a connection: ", std::strerror(errno),
                       "; raise the open-file limit (ulimit -n)");
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            continue;
        }
        int one = 1;
        ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::lock_guard lock(conns_mu);
        if (conns.size() >= kMaxConnections) {
            DT_LOG(warn, "store", "closing connection from ", peer_name(client.get()),
                   ": already serving ", kMaxConnections, " connections");
            continue;
        }
        Connection &c = conns.emplace_back();
        c.thread = std::thread([this, &c, fd = std::move(client)]() mutable {
            try {
                serve(std::move(fd));
            } catch (const std::exception &e) {
                DT_LOG(error, "store", "connection handler failed: ", e.what());
            } catch (...) {
                DT_LOG(error, "store", "connection handler failed with an unknown exception");
            }
            c.done.store(true);
        });
    }
}

void StoreServer::Impl::note_token_refusal(const std::string &peer)
{
    std::lock_guard lock(token_refusals_mu);
    ++token_refusals.count;
    token_refusals.last_peer = peer;
}

bool StoreServer::Impl::authenticate(int fd, const std::string &peer)
{
    const Deadline deadline = Deadline::after(kHandshakeTimeout);
    HandshakeResult hs = server_handshake(fd, auth, deadline, wake.get());
    switch (hs.outcome) {
    case Handshake::ok:
        return true;
    case Handshake::refused:
        ++refused;
        note_token_refusal(peer);
        DT_LOG(warn, "store", "refused connection from ", peer,
               ": wrong job token; every rank must have the same DISTTRAIN_JOB_TOKEN");
        send_refusal(fd, deadline, wake.get());
        return false;
    case Handshake::bad_magic:
    case Handshake::bad_server_proof:
        ++refused;
        DT_LOG(warn, "store", "refused connection from ", peer,
               ": it does not speak the disttrain store protocol");
        return false;
    case Handshake::io:
        break;
    }
    if (hs.io.status == IoStatus::timeout) {
        ++refused;
        DT_LOG(warn, "store", "refused connection from ", peer,
               ": it did not answer the token challenge within ",
               std::chrono::milliseconds(kHandshakeTimeout).count(), " ms");
    } else if (hs.io.status != IoStatus::woken) {
        DT_LOG(info, "store", "connection from ", peer, " ended during the token challenge: ",
               hs.io.describe());
    }
    return false;
}

proto::Reply StoreServer::Impl::execute(const proto::Request &req, int fd)
{
    using proto::Op;
    using proto::Status;
    proto::Reply reply;
    auto abandon = [this, fd] { return stopping.load() || peer_closed(fd); };
    switch (req.op) {
    case Op::set:
        state.set(req.key, req.value);
        break;
    case Op::get: {
        auto value = state.get(req.key, deadline_from_ms(req.timeout_ms), abandon);
        if (value)
            reply.value = std::move(*value);
        else
            reply.status = Status::timeout;
        break;
    }
    case Op::add:
        try {
            reply.number = state.add(req.key, req.delta);
        } catch (const Error &e) {
            reply.status = Status::error;
            reply.message = e.what();
        }
        break;
    case Op::wait:
        reply.keys = state.wait(req.keys, deadline_from_ms(req.timeout_ms), abandon);
        if (!reply.keys.empty())
            reply.status = Status::timeout;
        break;
    }
    return reply;
}

void StoreServer::Impl::serve(Fd fd)
{
    const std::string peer = peer_name(fd.get());
    if (!authenticate(fd.get(), peer))
        return;
    DT_LOG(debug, "store", "accepted connection from ", peer);
    std::string body;
    while (!stopping.load()) {
        proto::FrameRead fr =
            proto::read_frame(fd.get(), body, Deadline::never(), kBodyTimeout, wake.get());
        if (!fr.io.ok()) {
            if (fr.io.status == IoStatus::eof)
                DT_LOG(debug, "store", "connection from ", peer, " closed");
            else if (fr.io.status != IoStatus::woken)
                DT_LOG(warn, "store", "dropping connection from ", peer, ": ", fr.io.describe());
            return;
        }
        if (!fr.problem.empty()) {
            DT_LOG(warn, "store", "closing connection from ", peer, ": ", fr.problem);
            return;
        }
        proto::Request req;
        try {
            req = proto::decode_request(body);
        } catch (const Error &e) {
            DT_LOG(warn, "store", "closing connection from ", peer, ": malformed request: ",
                   e.what());
            return;
        }
        body.clear();
        body.shrink_to_fit(); // do not keep a 64 MiB buffer per idle connection
        proto::Reply reply = execute(req, fd.get());
        if (stopping.load())
            return;
        std::string frame = proto::encode_reply(req.op, reply);
        IoResult io = write_full(fd.get(), frame.data(), frame.size(),
                                 Deadline::after(kBodyTimeout), wake.get());
        if (!io.ok()) {
            if (io.status != IoStatus::woken)
                DT_LOG(info, "store", "cannot answer ", peer, ": ", io.describe());
            return;
        }
    }
}

void StoreServer::Impl::stop()
{
    stopping.store(true);
    uint64_t one = 1;
    if (wake.valid())
        (void)!::write(wake.get(), &one, sizeof one);
    state.shutdown();
    if (acceptor.joinable())
        acceptor.join();
    reap(true);
}

StoreServer::StoreServer(const std::string &bind_addr, Auth auth)
    : impl_(std::make_unique<Impl>(std::move(auth)))
{
    impl_->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!impl_->wake.valid())
        throw_error(DT_ERR_INTERNAL, "eventfd failed: ", std::strerror(errno));
    impl_->listen_on(bind_addr);
    impl_->acceptor = std::thread([impl = impl_.get()] { impl->accept_loop(); });
    DT_LOG(info, "store", "rendezvous store listening at ", impl_->address);
}

StoreServer::~StoreServer()
{
    impl_->stop();
}

std::string StoreServer::address() const
{
    return impl_->address;
}

uint64_t StoreServer::refused_connections() const
{
    return impl_->refused.load();
}

StoreServer::TokenRefusals StoreServer::token_refusals() const
{
    std::lock_guard lock(impl_->token_refusals_mu);
    return impl_->token_refusals;
}

} // namespace dt::bootstrap

// SPDX-License-Identifier: Apache-2.0
// StoreClient: one authenticated connection, one round trip at a time under a mutex. Every
// read waits with poll() against a deadline, so neither a silent store nor a store that
// dies mid-request can hang a rank. A connection that broke is dropped and the next call
// connects again (the failed call itself is not retried: add() is not idempotent), within
// that call's own deadline: callers poll the store in loops, and a reconnect that took a
// fresh timeout each time would multiply the caller's wait.
#include "bootstrap/store.h"

#include "bootstrap/net_address.h"
#include "bootstrap/store_handshake.h"
#include "bootstrap/store_protocol.h"
#include "telemetry/log.h"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <thread>

namespace dt::bootstrap {

namespace {

constexpr auto kBodyTimeout = std::chrono::seconds(60);
constexpr auto kForever = std::chrono::hours(24 * 365 * 10);

std::string ms_text(Millis m)
{
    return m.count() < 0 ? std::string("unlimited time") : cat(m.count(), " ms");
}

// Starts a non-blocking connect and waits for it until the deadline. Returns the
// connected socket, or an invalid Fd with err set.
Fd connect_one(const SockAddr &sa, const Deadline &deadline, int &err)
{
    Fd s(::socket(sa.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) {
        err = errno;
        return {};
    }
    if (::connect(s.get(), sa.get(), sa.len) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            return {};
        }
        for (;;) {
            pollfd p{s.get(), POLLOUT, 0};
            int n = ::poll(&p, 1, deadline.poll_ms());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = n == 0 ? ETIMEDOUT : errno;
                return {};
            }
            break;
        }
        int so_error = 0;
        socklen_t len = sizeof so_error;
        ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
        if (so_error != 0) {
            err = so_error;
            return {};
        }
    }
    int one = 1;
    ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

} // namespace

struct StoreClient::Impl {
    std::string address;
    std::string address_from; // where address came from, for messages
    HostPort hp;
    Auth auth;
    Millis timeout;
    std::string served_by;
    std::mutex mu;
    Fd sock;
    // Once the store has answered, a refused connection means its server is gone; before,
    // it may simply not be listening yet.
    bool answered = false;
    // Why the last call could not reach the store; cleared by the next call that does.
    std::optional<std::string> lost;
    // The numeric address of the last connection made; a mutex of its own, since mu is
    // held for as long as a call waits on the store.
    mutable std::mutex peer_mu;
    std::string peer;

    Impl(std::string addr, std::string from, Auth a, Millis t, std::string served)
        : address(std::move(addr)), address_from(std::move(from)), auth(std::move(a)),
          timeout(t), served_by(std::move(served))
    {
    }

    Deadline connect_deadline() const
    {
        return timeout.count() <= 0 ? Deadline::never() : Deadline::after(timeout);
    }
    [[noreturn]] void throw_no_answer(const std::string &detail) const;
    [[noreturn]] void throw_closed(const std::string &how) const;
    Fd connect(const Deadline &call_deadline, const std::string &what);
    Deadline reply_deadline(Millis server_wait) const;
    proto::Reply round_trip(const proto::Request &req, const Deadline &deadline,
                            const std::string &what);
    proto::Reply exchange(proto::Op op, const std::string &frame, const Deadline &deadline,
                          const std::string &what);
};

void StoreClient::Impl::throw_no_answer(const std::string &detail) const
{
    throw_error(DT_ERR_TIMEOUT, "no rendezvous store answered at ", address, " within ",
                ms_text(timeout), " (", detail,
                "); check ", address_from, " and that the launcher or rank 0 is running");
}

void StoreClient::Impl::throw_closed(const std::string &how) const
{
    const std::string who = served_by.empty() ? "the launcher or rank 0 that served it"
                                              : served_by;
    throw_error(DT_ERR_STORE, "the rendezvous store at ", address,
                served_by.empty() ? "" : cat(" (served by ", served_by, ")"), " closed ", how,
                ": ", who, " has probably failed or exited; its own error says why");
}

Fd StoreClient::Impl::connect(const Deadline &call_deadline, const std::string &what)
{
    const Deadline deadline = Deadline::earliest(connect_deadline(), call_deadline);
    const std::vector<SockAddr> addrs = resolve("the store address", hp, false);
    std::string last = "nothing tried";
    auto backoff = std::chrono::milliseconds(10);
    for (;;) {
        size_t refused = 0;
        for (const SockAddr &sa : addrs) {
            int err = 0;
            Fd s = connect_one(sa, deadline, err);
            if (!s.valid()) {
                refused += err == ECONNREFUSED;
                last = cat("last attempt: ", std::strerror(err));
                continue;
            }
            HandshakeResult hs = client_handshake(s.get(), auth, deadline);
            switch (hs.outcome) {
            case Handshake::ok: {
                answered = true;
                std::lock_guard peer_lock(peer_mu);
                peer = format_sockaddr(sa.get(), sa.len);
                return s;
            }
            case Handshake::refused:
                throw_error(DT_ERR_AUTH, "the rendezvous store at ", address,
                            " refused this process's job token; every rank must have the "
                            "same DISTTRAIN_JOB_TOKEN");
            case Handshake::bad_server_proof:
                throw_error(DT_ERR_AUTH, "the rendezvous store at ", address,
                            " proved a different job token than this process's; every rank "
                            "and the launcher must have the same DISTTRAIN_JOB_TOKEN");
            case Handshake::bad_magic:
                throw_error(DT_ERR_PROTOCOL, "the process listening at ", address,
                            " is not a disttrain rendezvous store (it sent an unknown "
                            "greeting); check ", address_from);
            case Handshake::io:
                break;
            }
            if (hs.io.status == IoStatus::timeout)
                throw_no_answer("a process accepted the connection but never completed "
                                "the token challenge");
            last = cat("last attempt: the connection ended during the token challenge: ",
                       hs.io.describe());
        }
        // Nothing listens where the store was: retrying would only wait out the deadline
        // for a server that is not coming back.
        if (answered && refused == addrs.size())
            throw_closed(cat("(it refuses connections) before ", what));
        if (deadline.expired())
            throw_no_answer(last);
        // The store may not be up yet: retry with a growing pause, never past the deadline.
        auto pause = backoff;
        if (!deadline.is_never())
            pause = std::min<std::chrono::milliseconds>(pause,
                                                        std::chrono::milliseconds(deadline.poll_ms()));
        std::this_thread::sleep_for(pause);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
    }
}

// How long to wait for a reply: the time the server may legitimately block (get/wait)
// plus the client's own timeout for the network round trip.
Deadline StoreClient::Impl::reply_deadline(Millis server_wait) const
{
    if (timeout.count() <= 0 || server_wait.count() < 0 || server_wait > kForever)
        return Deadline::never();
    return Deadline::after(server_wait + timeout);
}

// One call: records whether it reached the store, for lost().
proto::Reply StoreClient::Impl::round_trip(const proto::Request &req,
                                           const Deadline &deadline, const std::string &what)
{
    std::string frame = proto::encode_request(req); // bad arguments fail before any I/O
    std::lock_guard lock(mu);
    try {
        if (!sock.valid())
            sock = connect(deadline, what);
        proto::Reply reply = exchange(req.op, frame, deadline, what);
        lost.reset();
        return reply;
    } catch (const Error &e) {
        // A store that answered (an error reply, a malformed one, a refused token) is
        // still there; one that closed or fell silent is not.
        if (!sock.valid() && e.status() != DT_ERR_PROTOCOL && e.status() != DT_ERR_AUTH)
            lost = e.what();
        throw;
    }
}

proto::Reply StoreClient::Impl::exchange(proto::Op op, const std::string &frame,
                                         const Deadline &deadline, const std::string &what)
{
    auto broken = [&](const IoResult &io) {
        sock.reset();
        if (io.status == IoStatus::timeout)
            throw_error(DT_ERR_TIMEOUT, "the rendezvous store at ", address,
                        " did not answer ", what, " in time; the launcher or rank 0 may be "
                        "overloaded or stopped");
        throw_closed(cat("the connection during ", what,
                         io.status == IoStatus::eof ? "" : cat(" (", io.describe(), ")")));
    };
    IoResult io = write_full(sock.get(), frame.data(), frame.size(), deadline);
    if (!io.ok())
        broken(io);
    std::string body;
    proto::FrameRead fr = proto::read_frame(sock.get(), body, deadline, kBodyTimeout);
    if (!fr.io.ok())
        broken(fr.io);
    try {
        if (!fr.problem.empty())
            throw_error(DT_ERR_PROTOCOL, fr.problem);
        proto::Reply reply = proto::decode_reply(op, body);
        if (reply.status == proto::Status::error)
            throw_error(DT_ERR_STORE, "the rendezvous store at ", address, " failed ", what,
                        ": ", reply.message);
        return reply;
    } catch (const Error &e) {
        if (e.status() != DT_ERR_PROTOCOL)
            throw;
        sock.reset();
        throw_error(DT_ERR_PROTOCOL, "malformed reply from the rendezvous store at ",
                    address, " to ", what, ": ", e.what());
    }
}

StoreClient::StoreClient(const std::string &addr, Auth auth, Millis timeout,
                         std::string addr_from, std::string served_by)
    : impl_(std::make_unique<Impl>(addr, std::move(addr_from), std::move(auth), timeout,
                                   std::move(served_by)))
{
    try {
        impl_->hp = parse_host_port("store address", addr);
    } catch (const Error &e) {
        throw Error(DT_ERR_CONNECT, e.what());
    }
    impl_->sock = impl_->connect(Deadline::never(), "the first request");
    DT_LOG(debug, "store", "connected to the rendezvous store at ", addr);
}

StoreClient::~StoreClient() = default;

const std::string &StoreClient::address() const
{
    return impl_->address;
}

std::string StoreClient::peer_address() const
{
    std::lock_guard lock(impl_->peer_mu);
    return impl_->peer;
}

std::optional<std::string> StoreClient::lost() const
{
    std::lock_guard lock(impl_->mu);
    return impl_->lost;
}

void StoreClient::set(const std::string &key, const std::string &value)
{
    proto::Request req;
    req.op = proto::Op::set;
    req.key = key;
    req.value = value;
    impl_->round_trip(req, impl_->reply_deadline(Millis(0)), cat("a set of key '", key, "'"));
}

std::optional<std::string> StoreClient::try_get(const std::string &key, Millis timeout)
{
    proto::Request req;
    req.op = proto::Op::get;
    req.key = key;
    req.timeout_ms = timeout.count() < 0 ? proto::kNoTimeout : uint64_t(timeout.count());
    proto::Reply reply = impl_->round_trip(req, impl_->reply_deadline(timeout),
                                           cat("a get of key '", key, "'"));
    if (reply.status == proto::Status::timeout)
        return std::nullopt;
    return std::move(reply.value);
}

std::string StoreClient::get(const std::string &key, Millis timeout)
{
    if (std::optional<std::string> value = try_get(key, timeout))
        return std::move(*value);
    throw_error(DT_ERR_TIMEOUT, "timed out after ", ms_text(timeout), " waiting for key '",
                key, "' in the rendezvous store at ", impl_->address,
                "; the rank that should set it may have failed or not started yet");
}

int64_t StoreClient::add(const std::string &key, int64_t delta)
{
    proto::Request req;
    req.op = proto::Op::add;
    req.key = key;
    req.delta = delta;
    return impl_->round_trip(req, impl_->reply_deadline(Millis(0)),
                             cat("an add to key '", key, "'"))
        .number;
}

void StoreClient::wait(const std::vector<std::string> &keys, Millis timeout)
{
    proto::Request req;
    req.op = proto::Op::wait;
    req.keys = keys;
    req.timeout_ms = timeout.count() < 0 ? proto::kNoTimeout : uint64_t(timeout.count());
    proto::Reply reply = impl_->round_trip(req, impl_->reply_deadline(timeout),
                                           cat("a wait for ", keys.size(), " keys"));
    if (reply.status != proto::Status::timeout)
        return;
    std::string names;
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < reply.keys.size() && i < kShown; ++i)
        names += cat(i ? ", '" : "'", reply.keys[i], "'");
    if (reply.keys.size() > kShown)
        names += cat(" and ", reply.keys.size() - kShown, " more");
    throw_error(DT_ERR_TIMEOUT, "timed out after ", ms_text(timeout), " waiting for ",
                reply.keys.size(), " of ", keys.size(), " keys in the rendezvous store at ",
                impl_->address, ": still missing ", names,
                "; the ranks that should set them may have failed or not started yet");
}

} // namespace dt::bootstrap

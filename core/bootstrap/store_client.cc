// SPDX-License-Identifier: Apache-2.0
// StoreClient: one authenticated connection, one round trip at a time under a mutex. Every
// read waits with poll() against a deadline, so neither a silent store nor a store that
// dies mid-request can hang a rank. A connection that broke is dropped and the next call
// connects again (the failed call itself is not retried: add() is not idempotent).
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
    std::mutex mu;
    Fd sock;

    Impl(std::string addr, std::string from, Auth a, Millis t)
        : address(std::move(addr)), address_from(std::move(from)), auth(std::move(a)),
          timeout(t)
    {
    }

    Deadline connect_deadline() const
    {
        return timeout.count() <= 0 ? Deadline::never() : Deadline::after(timeout);
    }
    [[noreturn]] void throw_no_answer(const std::string &detail) const;
    Fd connect();
    Deadline reply_deadline(Millis server_wait) const;
    proto::Reply round_trip(const proto::Request &req, const Deadline &deadline,
                            const std::string &what);
};

void StoreClient::Impl::throw_no_answer(const std::string &detail) const
{
    throw_error(DT_ERR_TIMEOUT, "no rendezvous store answered at ", address, " within ",
                ms_text(timeout), " (", detail,
                "); check ", address_from, " and that the launcher or rank 0 is running");
}

Fd StoreClient::Impl::connect()
{
    const Deadline deadline = connect_deadline();
    const std::vector<SockAddr> addrs = resolve("the store address", hp, false);
    std::string last = "nothing tried";
    auto backoff = std::chrono::milliseconds(10);
    for (;;) {
        for (const SockAddr &sa : addrs) {
            int err = 0;
            Fd s = connect_one(sa, deadline, err);
            if (!s.valid()) {
                last = cat("last attempt: ", std::strerror(err));
                continue;
            }
            HandshakeResult hs = client_handshake(s.get(), auth, deadline);
            switch (hs.outcome) {
            case Handshake::ok:
                return s;
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

proto::Reply StoreClient::Impl::round_trip(const proto::Request &req,
                                           const Deadline &deadline, const std::string &what)
{
    std::string frame = proto::encode_request(req); // bad arguments fail before any I/O
    std::lock_guard lock(mu);
    if (!sock.valid())
        sock = connect();
    auto broken = [&](const IoResult &io) {
        sock.reset();
        if (io.status == IoStatus::timeout)
            throw_error(DT_ERR_TIMEOUT, "the rendezvous store at ", address,
                        " did not answer ", what, " in time; the launcher or rank 0 may be "
                        "overloaded or stopped");
        throw_error(DT_ERR_STORE, "lost the connection to the rendezvous store at ", address,
                    " during ", what, ": ", io.describe(),
                    "; the launcher or rank 0 may have exited");
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
        proto::Reply reply = proto::decode_reply(req.op, body);
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
                         std::string addr_from)
    : impl_(std::make_unique<Impl>(addr, std::move(addr_from), std::move(auth), timeout))
{
    try {
        impl_->hp = parse_host_port("store address", addr);
    } catch (const Error &e) {
        throw Error(DT_ERR_CONNECT, e.what());
    }
    impl_->sock = impl_->connect();
    DT_LOG(debug, "store", "connected to the rendezvous store at ", addr);
}

StoreClient::~StoreClient() = default;

const std::string &StoreClient::address() const
{
    return impl_->address;
}

void StoreClient::set(const std::string &key, const std::string &value)
{
    proto::Request req;
    req.op = proto::Op::set;
    req.key = key;
    req.value = value;
    impl_->round_trip(req, impl_->reply_deadline(Millis(0)), cat("a set of key '", key, "'"));
}

std::string StoreClient::get(const std::string &key, Millis timeout)
{
    proto::Request req;
    req.op = proto::Op::get;
    req.key = key;
    req.timeout_ms = timeout.count() < 0 ? proto::kNoTimeout : uint64_t(timeout.count());
    proto::Reply reply = impl_->round_trip(req, impl_->reply_deadline(timeout),
                                           cat("a get of key '", key, "'"));
    if (reply.status == proto::Status::timeout)
        throw_error(DT_ERR_TIMEOUT, "timed out after ", ms_text(timeout), " waiting for key '",
                    key, "' in the rendezvous store at ", impl_->address,
                    "; the rank that should set it may have failed or not started yet");
    return std::move(reply.value);
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

// SPDX-License-Identifier: Apache-2.0
#include "tcp_handshake.h"

#include "tcp_error.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace dt::tcp {
namespace {

constexpr char kConnectorLabel[16] = {'d', 't', '-', 't', 'c', 'p', '-', 'c',
                                      'o', 'n', 'n', 'e', 'c', 't', 'o', 'r'};
constexpr char kAcceptorLabel[16] = {'d', 't', '-', 't', 'c', 'p', '-', 'a',
                                     'c', 'c', 'e', 'p', 't', 'o', 'r', '\0'};

void put_rank(uint8_t *out, int32_t rank) {
    uint32_t v = static_cast<uint32_t>(rank);
    for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

} // namespace

std::vector<uint8_t> handshake_mac_input(bool connector, const uint8_t nonce_a[32],
                                         const uint8_t nonce_c[32], int32_t connector_rank,
                                         int32_t acceptor_rank) {
    // Fixed layout: label, both nonces, both ranks little-endian.
    std::vector<uint8_t> in(16 + 32 + 32 + 4 + 4);
    std::memcpy(in.data(), connector ? kConnectorLabel : kAcceptorLabel, 16);
    std::memcpy(in.data() + 16, nonce_a, 32);
    std::memcpy(in.data() + 48, nonce_c, 32);
    put_rank(in.data() + 80, connector_rank);
    put_rank(in.data() + 84, acceptor_rank);
    return in;
}

Handshake::Handshake(const Host &host, Fd fd, bool acceptor, int rank, int size,
                     Clock::time_point deadline)
    : host_(host), fd_(std::move(fd)), acceptor_(acceptor), rank_(rank), size_(size),
      deadline_(deadline), state_(State::hello) {}

Handshake Handshake::accept(const Host &host, Fd fd, int rank, int size,
                            Clock::time_point deadline) {
    Handshake h(host, std::move(fd), true, rank, size, deadline);
    h.peer_addr_ = peer_name(h.fd_.get());
    HandshakeHello hello{};
    std::memcpy(hello.magic, kHandshakeMagic, sizeof(hello.magic));
    hello.version = kHandshakeVersion;
    hello.rank = rank;
    if (host.random_bytes(h.nonce_a_, sizeof(h.nonce_a_)) != DTP_OK) {
        throw TcpError(DTP_ERR_INTERNAL, "tcp: the host could not provide random bytes");
    }
    std::memcpy(hello.nonce, h.nonce_a_, sizeof(hello.nonce));
    h.queue(&hello, sizeof(hello));
    h.state_ = State::answer;
    h.expect(sizeof(HandshakeAnswer));
    return h;
}

Handshake Handshake::connect(const Host &host, int rank, int peer_rank, const SockAddr &to,
                             int sockbuf, Clock::time_point deadline) {
    Fd fd(::socket(to.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw_errno(DTP_ERR_CONNECT, "tcp: cannot create a socket");
    // Buffer sizes must be set before connect to take part in window scaling.
    tune_data_socket(fd.get(), sockbuf);
    Handshake h(host, std::move(fd), false, rank, 0, deadline);
    h.peer_rank_ = peer_rank;
    h.peer_addr_ = to.str();
    h.to_ = to;
    h.state_ = State::connecting;
    return h;
}

void Handshake::expect(size_t n) {
    in_need_ = n;
    in_got_ = 0;
}

void Handshake::queue(const void *data, size_t n) {
    auto *p = static_cast<const uint8_t *>(data);
    out_.assign(p, p + n);
    out_done_ = 0;
}

Handshake::Result Handshake::fail(std::string why) {
    error_ = std::move(why);
    fd_.reset();
    return Result::failed;
}

Handshake::Result Handshake::step() {
    if (!fd_.valid()) return Result::failed;
    for (;;) {
        if (state_ == State::connecting) {
            if (::connect(fd_.get(), to_.sa(), to_.len) != 0 && errno != EISCONN) {
                if (errno == EINPROGRESS || errno == EALREADY || errno == EINTR) {
                    return Result::pending;
                }
                return fail(errno_text("connect failed", errno));
            }
            state_ = State::hello;
            expect(sizeof(HandshakeHello));
            continue;
        }
        if (out_done_ < out_.size()) {
            ssize_t n = ::send(fd_.get(), out_.data() + out_done_, out_.size() - out_done_,
                               MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                    return Result::pending;
                }
                return fail(errno_text("send failed during the handshake", errno));
            }
            out_done_ += static_cast<size_t>(n);
            continue;
        }
        if (state_ == State::done) return Result::done;
        if (in_got_ < in_need_) {
            ssize_t n = ::recv(fd_.get(), in_ + in_got_, in_need_ - in_got_, 0);
            if (n == 0) {
                return fail(acceptor_ ? "closed the connection during the handshake"
                                      : "closed the connection during the handshake (does "
                                        "this rank hold the job's token?)");
            }
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                    return Result::pending;
                }
                return fail(errno_text("receive failed during the handshake", errno));
            }
            in_got_ += static_cast<size_t>(n);
            if (in_got_ < in_need_) continue;
            Result r = on_message();
            if (r != Result::pending) return r;
        }
    }
}

Handshake::Result Handshake::on_message() {
    if (state_ == State::hello) { // connector: the acceptor's challenge
        HandshakeHello hello;
        std::memcpy(&hello, in_, sizeof(hello));
        if (std::memcmp(hello.magic, kHandshakeMagic, sizeof(hello.magic)) != 0) {
            return fail("not a disttrain tcp transport (bad handshake magic)");
        }
        if (hello.version != kHandshakeVersion) {
            return fail("speaks handshake version " + std::to_string(hello.version) +
                        ", this rank speaks " + std::to_string(kHandshakeVersion) +
                        "; run the same disttrain version on every rank");
        }
        if (hello.rank != peer_rank_) {
            return fail("answered as rank " + std::to_string(hello.rank) + ", not rank " +
                        std::to_string(peer_rank_) + " (stale address in the store?)");
        }
        std::memcpy(nonce_a_, hello.nonce, sizeof(nonce_a_));
        if (host_.random_bytes(nonce_c_, sizeof(nonce_c_)) != DTP_OK) {
            return fail("the host could not provide random bytes");
        }
        HandshakeAnswer answer{};
        std::memcpy(answer.magic, kHandshakeMagic, sizeof(answer.magic));
        answer.rank = rank_;
        answer.peer_rank = peer_rank_;
        std::memcpy(answer.nonce, nonce_c_, sizeof(answer.nonce));
        auto input = handshake_mac_input(true, nonce_a_, nonce_c_, rank_, peer_rank_);
        if (host_.sign(input.data(), input.size(), answer.mac) != DTP_OK) {
            return fail("the host could not sign the handshake");
        }
        queue(&answer, sizeof(answer));
        state_ = State::proof;
        expect(sizeof(HandshakeProof));
        return Result::pending;
    }
    if (state_ == State::answer) { // acceptor: the connector's response
        HandshakeAnswer answer;
        std::memcpy(&answer, in_, sizeof(answer));
        if (std::memcmp(answer.magic, kHandshakeMagic, sizeof(answer.magic)) != 0) {
            return fail("not a disttrain tcp handshake (bad magic)");
        }
        if (answer.peer_rank != rank_) {
            return fail("meant to reach rank " + std::to_string(answer.peer_rank) +
                        ", this is rank " + std::to_string(rank_));
        }
        if (answer.rank <= rank_ || answer.rank >= size_) {
            return fail("claims rank " + std::to_string(answer.rank) +
                        ", but only ranks " + std::to_string(rank_ + 1) + ".." +
                        std::to_string(size_ - 1) + " connect to rank " +
                        std::to_string(rank_));
        }
        std::memcpy(nonce_c_, answer.nonce, sizeof(nonce_c_));
        auto input = handshake_mac_input(true, nonce_a_, nonce_c_, answer.rank, rank_);
        if (!host_.verify(input.data(), input.size(), answer.mac)) {
            auth_failed_ = true;
            return fail("wrong HMAC for rank " + std::to_string(answer.rank) +
                        ": the peer does not hold this job's token");
        }
        peer_rank_ = answer.rank;
        HandshakeProof proof{};
        input = handshake_mac_input(false, nonce_a_, nonce_c_, peer_rank_, rank_);
        if (host_.sign(input.data(), input.size(), proof.mac) != DTP_OK) {
            return fail("the host could not sign the handshake");
        }
        queue(&proof, sizeof(proof));
        state_ = State::done;
        return Result::pending; // done once the proof is written
    }
    // connector: the acceptor's proof
    HandshakeProof proof;
    std::memcpy(&proof, in_, sizeof(proof));
    auto input = handshake_mac_input(false, nonce_a_, nonce_c_, rank_, peer_rank_);
    if (!host_.verify(input.data(), input.size(), proof.mac)) {
        auth_failed_ = true;
        return fail("answered with a wrong HMAC: it does not hold this job's token "
                    "(do all ranks share DISTTRAIN_JOB_TOKEN?)");
    }
    state_ = State::done;
    return Result::done;
}

} // namespace dt::tcp

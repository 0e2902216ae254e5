/* SPDX-License-Identifier: Apache-2.0 */
// Mutual authentication of one new connection with the job token (HMAC-SHA256 through
// the host services; the token never reaches the plugin):
//
//   acceptor  -> connector : Hello  {magic, version, acceptor rank, nonce_a}
//   connector -> acceptor  : Answer {magic, connector rank, acceptor rank, nonce_c,
//                                    HMAC("dt-tcp-connector" | nonce_a | nonce_c | ranks)}
//   acceptor  -> connector : Proof  {HMAC("dt-tcp-acceptor"  | nonce_a | nonce_c | ranks)}
//
// Both nonces are fresh per connection, so a recorded exchange cannot be replayed, and
// the two MACs carry different labels, so one side's proof cannot be reflected back as
// the other's. The state machine below runs on a non-blocking socket and reads exactly
// each message's size, so data frames that follow stay in the socket for the endpoint.
#pragma once

#include "tcp_address.h"
#include "tcp_host.h"
#include "tcp_socket.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::tcp {

using Clock = std::chrono::steady_clock;

constexpr char kHandshakeMagic[8] = {'D', 'T', 'T', 'C', 'P', 'H', 'S', '1'};
constexpr uint32_t kHandshakeVersion = 1;

struct HandshakeHello {
    char magic[8];
    uint32_t version;
    int32_t rank;
    uint8_t nonce[32];
};
struct HandshakeAnswer {
    char magic[8];
    int32_t rank;      // the connector
    int32_t peer_rank; // the acceptor it meant to reach
    uint8_t nonce[32];
    uint8_t mac[32];
};
struct HandshakeProof {
    uint8_t mac[32];
};
static_assert(sizeof(HandshakeHello) == 48 && sizeof(HandshakeAnswer) == 80 &&
              sizeof(HandshakeProof) == 32, "handshake messages are part of the wire format");

// The bytes each MAC covers: label (16 bytes), nonce_a, nonce_c, connector rank,
// acceptor rank. Exposed so tests can play a peer.
std::vector<uint8_t> handshake_mac_input(bool connector, const uint8_t nonce_a[32],
                                         const uint8_t nonce_c[32], int32_t connector_rank,
                                         int32_t acceptor_rank);

class Handshake {
public:
    enum class Result { pending, done, failed };

    // Acceptor side of an accepted socket.
    static Handshake accept(const Host &host, Fd fd, int rank, int size,
                            Clock::time_point deadline);
    // Connector side: starts a non-blocking connect to `to`.
    static Handshake connect(const Host &host, int rank, int peer_rank, const SockAddr &to,
                             int sockbuf, Clock::time_point deadline);

    // Moves the exchange as far as the socket allows. After `failed`, error() says why.
    Result step();

    int fd() const { return fd_.get(); }
    Fd release_fd() { return std::move(fd_); }
    bool is_acceptor() const { return acceptor_; }
    int peer_rank() const { return peer_rank_; }
    const std::string &peer_addr() const { return peer_addr_; }
    Clock::time_point deadline() const { return deadline_; }
    const std::string &error() const { return error_; }
    // True when the peer answered but proved it does not hold the job's token: retrying
    // the same peer cannot succeed.
    bool auth_failed() const { return auth_failed_; }

private:
    enum class State { connecting, hello, answer, proof, done };

    Handshake(const Host &host, Fd fd, bool acceptor, int rank, int size,
              Clock::time_point deadline);
    Result fail(std::string why);
    Result on_message();
    void expect(size_t n);
    void queue(const void *data, size_t n);

    Host host_;
    Fd fd_;
    bool acceptor_;
    int rank_;
    int size_;
    int peer_rank_ = -1;
    std::string peer_addr_;
    SockAddr to_;
    Clock::time_point deadline_;
    State state_;
    uint8_t nonce_a_[32]{};
    uint8_t nonce_c_[32]{};
    uint8_t in_[sizeof(HandshakeAnswer)]{};
    size_t in_need_ = 0;
    size_t in_got_ = 0;
    std::vector<uint8_t> out_;
    size_t out_done_ = 0;
    std::string error_;
    bool auth_failed_ = false;
};

} // namespace dt::tcp

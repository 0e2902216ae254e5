/* SPDX-License-Identifier: Apache-2.0 */
// The store's opening exchange, the challenge of auth.h with purpose "store":
//   server -> client : "DTSTORE1" nonce_a                       (8 + 32 bytes)
//   client -> server : "DTCLIEN1" nonce_c client_proof           (8 + 32 + 32 bytes)
//   server -> client : 'A' server_proof  (accepted, 1 + 32 bytes)
//                    | 'R'               (refused: wrong token; then the server closes)
// The explicit refusal lets a client with the wrong token say so instead of reporting a
// dropped connection. The magic strings make a stray connection (a port scanner, a client
// of another service) fail fast and visibly.
#pragma once

#include "bootstrap/auth.h"
#include "bootstrap/socket_io.h"

namespace dt::bootstrap {

enum class Handshake {
    ok,
    refused,          // client: the server refused our token; server: the client's proof was wrong
    bad_server_proof, // client: the server proved a different token
    bad_magic,        // the other side does not speak this protocol
    io,               // see HandshakeResult::io (eof, timeout, shutdown, socket error)
};

struct HandshakeResult {
    Handshake outcome = Handshake::ok;
    IoResult io;
};

inline constexpr const char *kStorePurpose = "store";

HandshakeResult client_handshake(int fd, const Auth &auth, const Deadline &deadline);
// On Handshake::refused the caller records the refusal and then calls send_refusal, so
// a client that has seen its refusal can rely on the server having counted it.
HandshakeResult server_handshake(int fd, const Auth &auth, const Deadline &deadline,
                                 int wake_fd);
void send_refusal(int fd, const Deadline &deadline, int wake_fd);

} // namespace dt::bootstrap

// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/store_handshake.h"

#include <cstring>
#include <openssl/crypto.h>

namespace dt::bootstrap {

namespace {

constexpr char kServerMagic[8] = {'D', 'T', 'S', 'T', 'O', 'R', 'E', '1'};
constexpr char kClientMagic[8] = {'D', 'T', 'C', 'L', 'I', 'E', 'N', '1'};
constexpr char kAccepted = 'A';
constexpr char kRefused = 'R';

HandshakeResult failed(IoResult io) { return {Handshake::io, io}; }

} // namespace

HandshakeResult client_handshake(int fd, const Auth &auth, const Deadline &deadline)
{
    // The magic alone first: a short banner from another service fails fast.
    unsigned char magic[8];
    IoResult io = read_full(fd, magic, sizeof magic, deadline);
    if (!io.ok())
        return failed(io);
    if (std::memcmp(magic, kServerMagic, 8) != 0)
        return {Handshake::bad_magic, {}};
    Nonce a{};
    io = read_full(fd, a.data(), a.size(), deadline);
    if (!io.ok())
        return failed(io);
    Nonce c = Auth::random_nonce();
    Mac proof = auth.client_proof(kStorePurpose, a, c);

    unsigned char answer[8 + 32 + 32];
    std::memcpy(answer, kClientMagic, 8);
    std::memcpy(answer + 8, c.data(), c.size());
    std::memcpy(answer + 40, proof.data(), proof.size());
    io = write_full(fd, answer, sizeof answer, deadline);
    if (!io.ok())
        return failed(io);

    char verdict = 0;
    io = read_full(fd, &verdict, 1, deadline);
    if (!io.ok())
        return failed(io);
    if (verdict == kRefused)
        return {Handshake::refused, {}};
    if (verdict != kAccepted)
        return {Handshake::bad_magic, {}};
    Mac server{};
    io = read_full(fd, server.data(), server.size(), deadline);
    if (!io.ok())
        return failed(io);
    Mac expected = auth.server_proof(kStorePurpose, a, c);
    if (CRYPTO_memcmp(expected.data(), server.data(), server.size()) != 0)
        return {Handshake::bad_server_proof, {}};
    return {};
}

HandshakeResult server_handshake(int fd, const Auth &auth, const Deadline &deadline,
                                 int wake_fd)
{
    Nonce a = Auth::random_nonce();
    unsigned char hello[8 + 32];
    std::memcpy(hello, kServerMagic, 8);
    std::memcpy(hello + 8, a.data(), a.size());
    IoResult io = write_full(fd, hello, sizeof hello, deadline, wake_fd);
    if (!io.ok())
        return failed(io);

    // Read the magic alone first so a stray client is told apart from a wrong token.
    unsigned char magic[8];
    io = read_full(fd, magic, sizeof magic, deadline, wake_fd);
    if (!io.ok())
        return failed(io);
    if (std::memcmp(magic, kClientMagic, 8) != 0)
        return {Handshake::bad_magic, {}};
    unsigned char answer[32 + 32];
    io = read_full(fd, answer, sizeof answer, deadline, wake_fd);
    if (!io.ok())
        return failed(io);
    Nonce c{};
    Mac proof{};
    std::memcpy(c.data(), answer, c.size());
    std::memcpy(proof.data(), answer + 32, proof.size());
    Mac expected = auth.client_proof(kStorePurpose, a, c);
    if (CRYPTO_memcmp(expected.data(), proof.data(), proof.size()) != 0)
        return {Handshake::refused, {}};
    unsigned char verdict[1 + 32];
    verdict[0] = static_cast<unsigned char>(kAccepted);
    Mac server = auth.server_proof(kStorePurpose, a, c);
    std::memcpy(verdict + 1, server.data(), server.size());
    io = write_full(fd, verdict, sizeof verdict, deadline, wake_fd);
    if (!io.ok())
        return failed(io);
    return {};
}

void send_refusal(int fd, const Deadline &deadline, int wake_fd)
{
    // Best effort: the client learns why; the connection is closed either way.
    (void)write_full(fd, &kRefused, 1, deadline, wake_fd);
}

} // namespace dt::bootstrap

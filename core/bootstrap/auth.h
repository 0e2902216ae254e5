/* SPDX-License-Identifier: Apache-2.0 */
// The job token and the HMAC challenge built on it (OpenSSL libcrypto). Every store and
// data connection proves both ends hold the token without sending it:
//   acceptor -> connector : nonce_a (32 random bytes)
//   connector -> acceptor : nonce_c, HMAC(token, "dt-client" | purpose | nonce_a | nonce_c)
//   acceptor -> connector : HMAC(token, "dt-server" | purpose | nonce_a | nonce_c)
// A side that sees a wrong MAC closes the connection (and the acceptor logs the refusal).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dt::bootstrap {

using Mac = std::array<uint8_t, 32>;
using Nonce = std::array<uint8_t, 32>;

class Auth {
public:
    // token: the shared secret (any bytes, typically 64 hex characters). Empty is allowed
    // only for single-rank jobs; the caller checks.
    explicit Auth(std::string token);

    Mac sign(const void *data, size_t len) const;
    // Constant-time comparison (CRYPTO_memcmp).
    bool verify(const void *data, size_t len, const Mac &mac) const;

    // MACs of the challenge above for a connection's purpose ("store", "tcp", ...).
    Mac client_proof(std::string_view purpose, const Nonce &a, const Nonce &c) const;
    Mac server_proof(std::string_view purpose, const Nonce &a, const Nonce &c) const;

    // Cryptographically secure random bytes (RAND_bytes); throws DT_ERR_INTERNAL on failure.
    static void random_bytes(void *buf, size_t len);
    static Nonce random_nonce();
    // A fresh token: 32 random bytes as 64 lowercase hex characters.
    static std::string random_token();

private:
    std::string token_;
};

} // namespace dt::bootstrap

// SPDX-License-Identifier: Apache-2.0
// HMAC-SHA256 over the job token with OpenSSL's libcrypto; nothing here is hand-rolled.
#include "bootstrap/auth.h"

#include "runtime/error.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string>
#include <utility>

namespace dt::bootstrap {

namespace {

std::string openssl_error()
{
    unsigned long code = ERR_get_error();
    if (code == 0)
        return "no OpenSSL error recorded";
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    return buf;
}

// The challenge message: label, purpose and both nonces. The NUL after each text part
// keeps ("dt-client", "x") and ("dt-clientx", "") from producing the same bytes.
std::string proof_message(std::string_view label, std::string_view purpose, const Nonce &a,
                          const Nonce &c)
{
    std::string msg;
    msg.reserve(label.size() + purpose.size() + 2 + a.size() + c.size());
    msg.append(label).push_back('\0');
    msg.append(purpose).push_back('\0');
    msg.append(reinterpret_cast<const char *>(a.data()), a.size());
    msg.append(reinterpret_cast<const char *>(c.data()), c.size());
    return msg;
}

} // namespace

Auth::Auth(std::string token) : token_(std::move(token))
{
    // HMAC() takes the key length as an int; no sane token comes near this.
    if (token_.size() > (1u << 20))
        throw_error(DT_ERR_INVALID_CONFIG, "the job token is ", token_.size(),
                    " bytes long; use at most 1 MiB (Auth::random_token() makes 64 hex "
                    "characters)");
}

Mac Auth::sign(const void *data, size_t len) const
{
    // HMAC() rejects a NULL key, so an empty token (single-rank jobs) points at a dummy.
    static const unsigned char empty_key = 0;
    const void *key = token_.empty() ? static_cast<const void *>(&empty_key)
                                     : static_cast<const void *>(token_.data());
    static const unsigned char empty_data = 0;
    const auto *bytes = len == 0 ? &empty_data : static_cast<const unsigned char *>(data);
    Mac mac{};
    unsigned int out_len = 0;
    if (HMAC(EVP_sha256(), key, static_cast<int>(token_.size()), bytes, len, mac.data(),
             &out_len) == nullptr ||
        out_len != mac.size())
        throw_error(DT_ERR_INTERNAL, "HMAC-SHA256 failed in libcrypto: ", openssl_error());
    return mac;
}

bool Auth::verify(const void *data, size_t len, const Mac &mac) const
{
    Mac expected = sign(data, len);
    return CRYPTO_memcmp(expected.data(), mac.data(), mac.size()) == 0;
}

Mac Auth::client_proof(std::string_view purpose, const Nonce &a, const Nonce &c) const
{
    std::string msg = proof_message("dt-client", purpose, a, c);
    return sign(msg.data(), msg.size());
}

Mac Auth::server_proof(std::string_view purpose, const Nonce &a, const Nonce &c) const
{
    std::string msg = proof_message("dt-server", purpose, a, c);
    return sign(msg.data(), msg.size());
}

void Auth::random_bytes(void *buf, size_t len)
{
    auto *p = static_cast<unsigned char *>(buf);
    // RAND_bytes takes an int; feed very large requests in chunks.
    while (len > 0) {
        int chunk = len > (1u << 30) ? (1 << 30) : static_cast<int>(len);
        if (RAND_bytes(p, chunk) != 1)
            throw_error(DT_ERR_INTERNAL, "RAND_bytes failed to produce ", chunk,
                        " random bytes: ", openssl_error());
        p += chunk;
        len -= static_cast<size_t>(chunk);
    }
}

Nonce Auth::random_nonce()
{
    Nonce n{};
    random_bytes(n.data(), n.size());
    return n;
}

std::string Auth::random_token()
{
    unsigned char raw[32];
    random_bytes(raw, sizeof raw);
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * sizeof raw);
    for (unsigned char b : raw) {
        hex.push_back(digits[b >> 4]);
        hex.push_back(digits[b & 15]);
    }
    OPENSSL_cleanse(raw, sizeof raw);
    return hex;
}

} // namespace dt::bootstrap

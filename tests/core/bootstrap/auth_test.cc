// SPDX-License-Identifier: Apache-2.0
// The job token's HMAC and challenge proofs.
#include "bootstrap/auth.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dt::bootstrap {
namespace {

std::string hex(const Mac &mac)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (uint8_t b : mac) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

// RFC 4231, test case 1: key 0x0b x 20, data "Hi There".
TEST(Auth, MatchesRfc4231TestCase1)
{
    Auth auth(std::string(20, '\x0b'));
    std::string data = "Hi There";
    EXPECT_EQ(hex(auth.sign(data.data(), data.size())),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

// RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
TEST(Auth, MatchesRfc4231TestCase2)
{
    Auth auth("Jefe");
    std::string data = "what do ya want for nothing?";
    EXPECT_EQ(hex(auth.sign(data.data(), data.size())),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Auth, VerifyAcceptsOwnMacAndRejectsOthers)
{
    Auth a("token-a"), b("token-b");
    std::string data = "payload";
    Mac mac = a.sign(data.data(), data.size());
    EXPECT_TRUE(a.verify(data.data(), data.size(), mac));
    EXPECT_FALSE(b.verify(data.data(), data.size(), mac));
    std::string other = "payloae";
    EXPECT_FALSE(a.verify(other.data(), other.size(), mac));
    Mac flipped = mac;
    flipped[31] ^= 1;
    EXPECT_FALSE(a.verify(data.data(), data.size(), flipped));
}

TEST(Auth, EmptyTokenAndEmptyDataWork)
{
    Auth empty("");
    Mac mac = empty.sign(nullptr, 0);
    EXPECT_TRUE(empty.verify(nullptr, 0, mac));
    EXPECT_FALSE(Auth("x").verify(nullptr, 0, mac));
}

TEST(Auth, ProofsDependOnTokenSideAndPurpose)
{
    Auth a("secret"), same("secret"), other("Secret");
    Nonce na = Auth::random_nonce(), nc = Auth::random_nonce();
    Mac client = a.client_proof("store", na, nc);
    EXPECT_EQ(client, same.client_proof("store", na, nc));
    EXPECT_NE(client, other.client_proof("store", na, nc));
    EXPECT_NE(client, a.server_proof("store", na, nc)); // a reflected proof is no proof
    EXPECT_NE(client, a.client_proof("tcp", na, nc));
    EXPECT_NE(client, a.client_proof("store", nc, na));
    Nonce na2 = na;
    na2[0] ^= 0x80;
    EXPECT_NE(client, a.client_proof("store", na2, nc));
}

TEST(Auth, RandomNoncesAndTokensDiffer)
{
    std::set<Nonce> nonces;
    for (int i = 0; i < 64; ++i)
        nonces.insert(Auth::random_nonce());
    EXPECT_EQ(nonces.size(), 64u);

    std::string t1 = Auth::random_token(), t2 = Auth::random_token();
    EXPECT_EQ(t1.size(), 64u);
    EXPECT_EQ(t1.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_NE(t1, t2);
}

} // namespace
} // namespace dt::bootstrap

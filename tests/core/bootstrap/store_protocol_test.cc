// SPDX-License-Identifier: Apache-2.0
// The store's frame encoding: round trips, and strict rejection of malformed bodies.
#include "bootstrap/store_protocol.h"

#include "bootstrap_test_util.h"

namespace dt::bootstrap::proto {
namespace {

using test::error_of;

std::string body_of(const std::string &frame)
{
    return frame.substr(4);
}

std::string be32(uint32_t v)
{
    std::string s;
    for (int shift = 24; shift >= 0; shift -= 8)
        s.push_back(static_cast<char>((v >> shift) & 0xff));
    return s;
}

TEST(StoreProtocol, FramePrefixIsTheBodyLength)
{
    Request req;
    req.op = Op::set;
    req.key = "k";
    req.value = "value";
    std::string frame = encode_request(req);
    EXPECT_EQ(frame.substr(0, 4), be32(static_cast<uint32_t>(frame.size() - 4)));
}

TEST(StoreProtocol, RequestsRoundTrip)
{
    Request set;
    set.op = Op::set;
    set.key = "addr/3";
    set.value = std::string("bin\0ary", 7);
    Request got = decode_request(body_of(encode_request(set)));
    EXPECT_EQ(got.op, Op::set);
    EXPECT_EQ(got.key, set.key);
    EXPECT_EQ(got.value, set.value);

    Request get;
    get.op = Op::get;
    get.key = "k";
    get.timeout_ms = kNoTimeout;
    got = decode_request(body_of(encode_request(get)));
    EXPECT_EQ(got.op, Op::get);
    EXPECT_EQ(got.timeout_ms, kNoTimeout);

    Request add;
    add.op = Op::add;
    add.key = "counter";
    add.delta = -42;
    got = decode_request(body_of(encode_request(add)));
    EXPECT_EQ(got.delta, -42);

    Request wait;
    wait.op = Op::wait;
    wait.keys = {"a", "b", "c"};
    wait.timeout_ms = 1234;
    got = decode_request(body_of(encode_request(wait)));
    EXPECT_EQ(got.keys, wait.keys);
    EXPECT_EQ(got.timeout_ms, 1234u);
}

TEST(StoreProtocol, RepliesRoundTrip)
{
    Reply r;
    r.value = "v";
    EXPECT_EQ(decode_reply(Op::get, body_of(encode_reply(Op::get, r))).value, "v");
    r.number = -7;
    EXPECT_EQ(decode_reply(Op::add, body_of(encode_reply(Op::add, r))).number, -7);
    Reply missing;
    missing.status = Status::timeout;
    missing.keys = {"x", "y"};
    Reply back = decode_reply(Op::wait, body_of(encode_reply(Op::wait, missing)));
    EXPECT_EQ(back.status, Status::timeout);
    EXPECT_EQ(back.keys, missing.keys);
    Reply err;
    err.status = Status::error;
    err.message = "bad";
    EXPECT_EQ(decode_reply(Op::add, body_of(encode_reply(Op::add, err))).message, "bad");
}

TEST(StoreProtocol, RejectsMalformedRequests)
{
    std::string set = body_of([] {
        Request r;
        r.op = Op::set;
        r.key = "key";
        r.value = "value";
        return encode_request(r);
    }());
    // Every truncation of a valid body is refused, never read past its end.
    for (size_t n = 0; n < set.size(); ++n)
        error_of([&] { decode_request(set.substr(0, n)); }, DT_ERR_PROTOCOL);
    // Trailing bytes.
    error_of([&] { decode_request(set + "x"); }, DT_ERR_PROTOCOL);
    // Unknown op.
    error_of([&] { decode_request(std::string("\x09", 1) + set.substr(1)); }, DT_ERR_PROTOCOL);
    // A key length far past the frame's end, and one over the cap.
    error_of([&] { decode_request(std::string("\x01", 1) + be32(0xfffffff0u) + "key"); },
             DT_ERR_PROTOCOL);
    std::string msg = error_of(
        [&] {
            decode_request(std::string("\x02", 1) + be32(kMaxKeyBytes + 1) +
                           std::string(kMaxKeyBytes + 1, 'k') + std::string(8, '\0'));
        },
        DT_ERR_PROTOCOL);
    EXPECT_NE(msg.find("exceeds the limit"), std::string::npos) << msg;
    // Empty key.
    error_of([&] { decode_request(std::string("\x02", 1) + be32(0) + std::string(8, '\0')); },
             DT_ERR_PROTOCOL);
    // A wait claiming four billion keys in a few bytes: refused without allocating them.
    error_of([&] { decode_request(std::string("\x04", 1) + be32(0xffffffffu)); },
             DT_ERR_PROTOCOL);
    error_of([&] { decode_request(std::string("\x04", 1) + be32(1000) + be32(1) + "a"); },
             DT_ERR_PROTOCOL);
}

TEST(StoreProtocol, RejectsMalformedReplies)
{
    error_of([] { decode_reply(Op::get, ""); }, DT_ERR_PROTOCOL);
    error_of([] { decode_reply(Op::get, std::string("\x07", 1)); }, DT_ERR_PROTOCOL);
    error_of([] { decode_reply(Op::get, std::string("\x00", 1) + be32(5) + "abc"); },
             DT_ERR_PROTOCOL);
    error_of([] { decode_reply(Op::set, std::string("\x01", 1)); }, DT_ERR_PROTOCOL);
    error_of([] { decode_reply(Op::set, std::string("\x00\x00", 2)); }, DT_ERR_PROTOCOL);
}

TEST(StoreProtocol, EncodeRefusesOversizedFieldsAsCallerErrors)
{
    Request r;
    r.op = Op::set;
    r.key = std::string(kMaxKeyBytes + 1, 'k');
    error_of([&] { encode_request(r); }, DT_ERR_INVALID_ARGUMENT);
    r.key = "";
    error_of([&] { encode_request(r); }, DT_ERR_INVALID_ARGUMENT);
    r.key = std::string(kMaxKeyBytes, 'k');
    EXPECT_NO_THROW(encode_request(r));
}

} // namespace
} // namespace dt::bootstrap::proto

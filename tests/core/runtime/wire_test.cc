// SPDX-License-Identifier: Apache-2.0
// The byte reader and writer under every negotiation message: little-endian integers and
// length-prefixed strings, and a reader that refuses (DT_ERR_PROTOCOL) any length that
// would take it past the end of its buffer.
#include "runtime/wire.h"

#include "expect_protocol_error.h"

#include <gtest/gtest.h>

#include <limits>

namespace dt::wire {
namespace {

using test::expect_protocol_error;

TEST(Wire, IntegersAreLittleEndian)
{
    // The byte layout is what peers on other builds read, so it is checked byte by byte.
    Writer w;
    w.put<uint32_t>(0x04030201u);
    w.put<int16_t>(-2);
    w.put<uint8_t>(0xab);
    EXPECT_EQ(w.bytes(), (std::vector<uint8_t>{1, 2, 3, 4, 0xfe, 0xff, 0xab}));
}

TEST(Wire, StringsAreLengthPrefixedAndKeepEveryByte)
{
    const std::string odd("a\0b\xff\n", 5);
    Writer w;
    w.put_string(odd);
    w.put_string("");
    ASSERT_EQ(w.bytes().size(), 4u + 5u + 4u);
    EXPECT_EQ(w.bytes()[0], 5);
    Reader r(w.bytes().data(), w.bytes().size());
    EXPECT_EQ(r.get_string(), odd);
    EXPECT_FALSE(r.done());
    EXPECT_EQ(r.get_string(), "");
    EXPECT_TRUE(r.done());
}

TEST(Wire, ExtremeValuesRoundTrip)
{
    Writer w;
    w.put<uint64_t>(std::numeric_limits<uint64_t>::max());
    w.put<int32_t>(std::numeric_limits<int32_t>::min());
    w.put<double>(-0.5);
    Reader r(w.bytes().data(), w.bytes().size());
    EXPECT_EQ(r.get<uint64_t>(), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(r.get<int32_t>(), std::numeric_limits<int32_t>::min());
    EXPECT_EQ(r.get<double>(), -0.5);
    EXPECT_TRUE(r.done());
}

TEST(Wire, ReadingPastTheEndIsAProtocolError)
{
    const uint8_t three[] = {1, 2, 3};
    Reader r(three, sizeof three);
    expect_protocol_error([&] { r.get<uint32_t>(); }, "needs 4 more bytes at offset 0 of 3");
    // A failed read consumes nothing: what fits can still be read.
    EXPECT_EQ(r.get<uint16_t>(), 0x0201);
    expect_protocol_error([&] { r.get<uint16_t>(); }, "needs 2 more bytes at offset 2 of 3");

    Reader empty(nullptr, 0);
    EXPECT_TRUE(empty.done());
    expect_protocol_error([&] { empty.get<uint8_t>(); }, "malformed negotiation message");
}

TEST(Wire, AStringLongerThanWhatIsLeftIsRefusedBeforeAnyCopy)
{
    // A length of 4 GiB - 1 with no bytes behind it: refused from the length alone, with
    // no allocation of that size.
    Writer w;
    w.put<uint32_t>(0xffffffffu);
    Reader r(w.bytes().data(), w.bytes().size());
    expect_protocol_error([&] { r.get_string(); }, "needs 4294967295 more bytes at offset 4");

    // One byte short.
    Writer v;
    v.put_string("abcdef");
    Reader s(v.bytes().data(), v.bytes().size() - 1);
    expect_protocol_error([&] { s.get_string(); }, "needs 6 more bytes at offset 4 of 9");
}

TEST(Wire, FinishRefusesBytesLeftOver)
{
    const uint8_t bytes[] = {1, 2, 3, 4, 5};
    Reader r(bytes, sizeof bytes);
    r.get<uint32_t>();
    expect_protocol_error([&] { r.finish(); }, "1 byte after its end at offset 4 of 5");
    r.get<uint8_t>();
    EXPECT_NO_THROW(r.finish());
}

} // namespace
} // namespace dt::wire

// SPDX-License-Identifier: Apache-2.0
// The timeline's JSON strings: an operation's name is the caller's bytes, and the file
// must stay valid JSON (UTF-8, RFC 8259) whatever they are.
#include "telemetry/timeline.h"

#include <gtest/gtest.h>

#include <string>

using dt::json_escape;

TEST(JsonEscape, QuotesBackslashesAndControlCharacters)
{
    EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
    EXPECT_EQ(json_escape("l1\nl2\tx"), "l1\\nl2\\tx");
    EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
    EXPECT_EQ(json_escape(std::string("nul\0end", 7)), "nul\\u0000end");
}

TEST(JsonEscape, ValidUtf8PassesAsIs)
{
    const std::string names[] = {"grad.w", "gr\xc3\xa4" "dient", "\xe6\xa2\xaf\xe5\xba\xa6",
                                 "\xf0\x9f\x94\xa5", "\xef\xbf\xbd"};
    for (const std::string &name : names)
        EXPECT_EQ(json_escape(name), name);
}

TEST(JsonEscape, BytesThatAreNotUtf8AreShownAsHex)
{
    // Not UTF-8: a stray byte, a truncated sequence, an overlong form, a surrogate and a
    // code point past U+10FFFF. Each byte of such a sequence is written as the text \xNN.
    EXPECT_EQ(json_escape("bad\xff\xfeutf8"), "bad\\\\xff\\\\xfeutf8");
    EXPECT_EQ(json_escape("cut\xc3"), "cut\\\\xc3");
    EXPECT_EQ(json_escape("\xc3" "a"), "\\\\xc3a");
    EXPECT_EQ(json_escape("\xc0\xaf"), "\\\\xc0\\\\xaf");
    EXPECT_EQ(json_escape("\xed\xa0\x80"), "\\\\xed\\\\xa0\\\\x80");
    EXPECT_EQ(json_escape("\xf4\x90\x80\x80"), "\\\\xf4\\\\x90\\\\x80\\\\x80");
}

// SPDX-License-Identifier: Apache-2.0
// Reading integer variables: decimal digits only, a '-' only where negatives mean
// something, and a message naming the variable, the value, the range and the form.
#include "runtime/env.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::env {
namespace {

std::string refusal(const std::string &value, int64_t min, int64_t max)
{
    try {
        parse_int("DISTTRAIN_X", value, min, max);
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_CONFIG);
        return e.what();
    }
    ADD_FAILURE() << "'" << value << "' was taken";
    return {};
}

TEST(ParseInt, TakesDecimalDigits)
{
    EXPECT_EQ(parse_int("x", "0", 0, 10), 0);
    EXPECT_EQ(parse_int("x", "007", 0, 10), 7);
    EXPECT_EQ(parse_int("x", "9223372036854775807", 0, INT64_MAX), INT64_MAX);
    EXPECT_EQ(parse_int("x", "-1", -1, 10), -1);
}

TEST(ParseInt, RefusesBlanksSignsAndSuffixes)
{
    for (const char *value : {" 3", "3 ", "+3", "\t3", "3x", "0x3", "1e3", "", "-", "--1",
                              "+-1", "3.0"}) {
        std::string why = refusal(value, 0, 10);
        EXPECT_NE(why.find(std::string("DISTTRAIN_X='") + value + "' is not an integer; "
                           "expected an integer in [0, 10], in decimal digits (no spaces, "
                           "'+' or suffix)"),
                  std::string::npos) << why;
    }
    EXPECT_NE(refusal("+1", -1, 10).find("in decimal digits after an optional '-'"),
              std::string::npos);
}

TEST(ParseInt, ANegativeOrTooLargeValueIsOutOfRange)
{
    EXPECT_NE(refusal("-4", 0, 10).find("DISTTRAIN_X='-4' is out of range; expected an "
                                        "integer in [0, 10]"),
              std::string::npos);
    EXPECT_NE(refusal("11", 0, 10).find("is out of range"), std::string::npos);
    EXPECT_NE(refusal("-2", -1, 10).find("is out of range"), std::string::npos);
    EXPECT_NE(refusal("99999999999999999999", 0, INT64_MAX).find("is out of range"),
              std::string::npos);
}

} // namespace
} // namespace dt::env

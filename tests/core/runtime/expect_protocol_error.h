/* SPDX-License-Identifier: Apache-2.0 */
// Shared by the negotiation and wire tests: f must throw a DT_ERR_PROTOCOL dt::Error whose
// message contains part.
#pragma once

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::test {

template <typename F>
void expect_protocol_error(F f, const std::string &part)
{
    try {
        f();
        ADD_FAILURE() << "no error; expected one containing '" << part << "'";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_PROTOCOL) << e.what();
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

} // namespace dt::test

// SPDX-License-Identifier: Apache-2.0
// The names of unnamed calls, and the one warning when they come from a second thread.
#include "runtime/unnamed_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace dt {
namespace {

size_t count_of(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

TEST(UnnamedCalls, NamesCountTheContextsUnnamedCalls)
{
    UnnamedCalls calls;
    EXPECT_EQ(calls.name(OpKind::allreduce), "allreduce.0");
    EXPECT_EQ(calls.name(OpKind::barrier), "barrier.1");
    EXPECT_EQ(calls.name(OpKind::allgatherv), "allgatherv.2");
}

TEST(UnnamedCalls, OneThreadIsNeverWarnedAbout)
{
    UnnamedCalls calls;
    testing::internal::CaptureStderr();
    for (int i = 0; i < 3; ++i)
        calls.name(OpKind::allreduce);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(UnnamedCalls, ASecondThreadIsWarnedAboutOncePerContext)
{
    UnnamedCalls calls, other;
    testing::internal::CaptureStderr();
    calls.name(OpKind::allreduce);
    // In turn, not at once: the warning cannot tell the two apart.
    for (int t = 0; t < 3; ++t)
        std::thread([&] {
            calls.name(OpKind::allreduce);
            calls.name(OpKind::broadcast);
        }).join();
    calls.name(OpKind::allreduce);
    std::thread([&] { other.name(OpKind::barrier); }).join();
    other.name(OpKind::barrier); // the first caller of `other` was the thread above
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "unnamed calls (name NULL) come from more than one thread"), 2u)
        << err;
    EXPECT_EQ(count_of(err, "warn context:"), 2u) << err;
    EXPECT_NE(err.find("give the calls of concurrent threads names of their own"),
              std::string::npos);
}

} // namespace
} // namespace dt

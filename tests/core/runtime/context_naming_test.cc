// SPDX-License-Identifier: Apache-2.0
// How a context finds its part of the store: names, the creation-order numbering of
// unnamed contexts, and the refusal of unnamed creations that overlap in one process.
#include "runtime/context_naming.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dt {
namespace {

dt_status_t status_of(const std::function<void()> &f, std::string *message = nullptr)
{
    try {
        f();
        return DT_OK;
    } catch (const Error &e) {
        if (message != nullptr)
            *message = e.what();
        return e.status();
    }
}

TEST(ContextNaming, NamesAreCheckedForWhatStoreKeysAllow)
{
    EXPECT_EQ(check_context_name("n", "pipe.stage-1_a"), "pipe.stage-1_a");
    EXPECT_EQ(check_context_name("n", std::string(128, 'x')), std::string(128, 'x'));
    for (const std::string &bad : std::vector<std::string>{"", "a/b", "a b", "ä", "x\n",
                                                           std::string(129, 'x')}) {
        std::string why;
        EXPECT_EQ(status_of([&] { check_context_name("dt_context_params_t.name", bad); }, &why),
                  DT_ERR_INVALID_CONFIG)
            << bad;
        EXPECT_NE(why.find("dt_context_params_t.name='" + bad + "' is not a context name; "
                           "use 1 to 128 letters, digits, '.', '_' or '-'"),
                  std::string::npos)
            << why;
    }
}

TEST(ContextNaming, UnnamedSharedContextsAreNumberedInCreationOrder)
{
    std::string first, second;
    {
        ContextSlot a("", true);
        a.created();
        first = a.root();
    }
    ContextSlot b("", true);
    second = b.root();
    ASSERT_EQ(first.rfind("ctx", 0), 0u) << first;
    EXPECT_EQ(std::stoull(second.substr(3)), std::stoull(first.substr(3)) + 1) << second;
}

TEST(ContextNaming, AnUnnamedCreationWhileAnotherIsUnderWayIsRefused)
{
    std::optional<ContextSlot> creating;
    creating.emplace("", true);
    std::string why;
    EXPECT_EQ(status_of([] { ContextSlot overlapping("", true); }, &why),
              DT_ERR_INVALID_STATE);
    EXPECT_NE(why.find("another thread of this process is creating an unnamed context"),
              std::string::npos) << why;
    EXPECT_NE(why.find("give each context created from several threads at once a name of "
                       "its own"), std::string::npos) << why;
    EXPECT_NE(why.find("dt_context_params_t.name"), std::string::npos) << why;
    // Named contexts and contexts with a store of their own do not pair by order.
    EXPECT_EQ(status_of([] { ContextSlot named("during", true); }), DT_OK);
    EXPECT_EQ(status_of([] { ContextSlot own("", false); }), DT_OK);
    // The one under way fails too: which of the two each rank created first is chance.
    EXPECT_EQ(status_of([&] { creating->created(); }, &why), DT_ERR_INVALID_STATE);
    EXPECT_NE(why.find("another thread of this process started creating an unnamed context "
                       "while this one was being created"), std::string::npos) << why;
    creating.reset();
    // Without an overlap, a created context lets the next unnamed one start.
    creating.emplace("", true);
    EXPECT_EQ(status_of([&] { creating->created(); }), DT_OK);
    EXPECT_EQ(status_of([] { ContextSlot next("", true); }), DT_OK);
    creating.reset();
    // A creation that failed (its slot gone before created()) does not block the next.
    { ContextSlot failed("", true); }
    EXPECT_EQ(status_of([] { ContextSlot next("", true); }), DT_OK);
}

TEST(ContextNaming, ANameIsUniqueAmongLiveContextsAndMayBeUsedAgainAfter)
{
    std::string first_root;
    {
        ContextSlot a("model", true);
        first_root = a.root();
        EXPECT_EQ(first_root, "named/model/0");
        std::string why;
        EXPECT_EQ(status_of([] { ContextSlot again("model", true); }, &why),
                  DT_ERR_INVALID_CONFIG);
        EXPECT_NE(why.find("dt_context_params_t.name='model': a live context of this "
                           "process already has this name"), std::string::npos) << why;
    }
    // Its keys of the first use stay in the store: the next use gets keys of its own.
    ContextSlot b("model", true);
    EXPECT_EQ(b.root(), "named/model/1");
}

TEST(ContextNaming, PrivateContextsCountApart)
{
    ContextSlot shared("", true);
    shared.created();
    ContextSlot own("", false);
    EXPECT_EQ(own.root().rfind("private", 0), 0u) << own.root();
    ContextSlot next("", true);
    EXPECT_EQ(std::stoull(next.root().substr(3)), std::stoull(shared.root().substr(3)) + 1);
}

} // namespace
} // namespace dt

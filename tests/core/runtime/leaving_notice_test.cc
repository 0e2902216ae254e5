// SPDX-License-Identifier: Apache-2.0
// What a rank tells its peers as its engine stops: DT_OK (a peer still in a native
// collective with it lets that finish) only when every call it made completed.
#include "runtime/leaving_notice.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

using Cause = std::optional<std::pair<dt_status_t, std::string>>;

const Cause kPeerLeft{{DT_ERR_PEER_LOST, "rank 0 left the job: rank 0 has destroyed its "
                                         "context"}};

TEST(LeavingNotice, ACleanExitSaysEveryCallCompleted)
{
    LeavingNotice n = leaving_notice(2, std::nullopt, false, false, false);
    EXPECT_TRUE(n.send);
    EXPECT_EQ(n.status, DT_OK);
    EXPECT_EQ(n.text, "rank 2 has destroyed its context");
}

TEST(LeavingNotice, APeerLeavingWhileThisRankWasIdleStillCountsAsEveryCallCompleted)
{
    // Its last collective completed here; a peer may still be finishing it natively.
    LeavingNotice n = leaving_notice(2, kPeerLeft, true, false, false);
    EXPECT_TRUE(n.send);
    EXPECT_EQ(n.status, DT_OK);
    EXPECT_EQ(n.text, "rank 2 has destroyed its context, every call it made completed, "
                      "after: rank 0 left the job: rank 0 has destroyed its context");
}

TEST(LeavingNotice, ACallThatFailedOrWasRefusedIsPassedOnAsALostPeer)
{
    // A peer may be waiting in a collective this rank never took part in.
    LeavingNotice n = leaving_notice(2, kPeerLeft, true, true, false);
    EXPECT_TRUE(n.send);
    EXPECT_EQ(n.status, DT_ERR_PEER_LOST);
    EXPECT_EQ(n.text, "rank 2 has destroyed its context after: rank 0 left the job: rank 0 "
                      "has destroyed its context");
}

TEST(LeavingNotice, ADisagreementStaysADisagreement)
{
    LeavingNotice n =
        leaving_notice(1, Cause{{DT_ERR_MISMATCH, "the ranks disagree"}}, true, false, false);
    EXPECT_EQ(n.status, DT_ERR_MISMATCH);
    EXPECT_EQ(n.text, "rank 1 has destroyed its context after: the ranks disagree");
}

TEST(LeavingNotice, AnAbortIsAnAbort)
{
    LeavingNotice n = leaving_notice(1, Cause{{DT_ERR_ABORTED, "rank 1 aborted its context"}},
                                     false, true, true);
    EXPECT_TRUE(n.send);
    EXPECT_EQ(n.status, DT_ERR_ABORTED);
    EXPECT_EQ(n.text, "rank 1 aborted its context");
}

TEST(LeavingNotice, AnErrorOfItsOwnIsToldOnceWithItsStatus)
{
    const Cause lost{{DT_ERR_TIMEOUT, "allreduce: timed out waiting for rank 0"}};
    LeavingNotice n = leaving_notice(1, lost, false, false, false);
    EXPECT_TRUE(n.send);
    EXPECT_EQ(n.status, DT_ERR_TIMEOUT);
    EXPECT_EQ(n.text, lost->second);
    // The failure hook told the peers already.
    EXPECT_FALSE(leaving_notice(1, lost, false, true, true).send);
}

} // namespace
} // namespace dt

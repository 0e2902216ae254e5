// SPDX-License-Identifier: Apache-2.0
#include "runtime/leaving_notice.h"

#include "runtime/error.h"

namespace dt {

LeavingNotice leaving_notice(int rank,
                             const std::optional<std::pair<dt_status_t, std::string>> &error,
                             bool departure_only, bool calls_failed, bool notified)
{
    if (!error) // every call of this rank completed
        return {true, DT_OK, cat("rank ", rank, " has destroyed its context")};
    const auto &[status, message] = *error;
    if (status == DT_ERR_ABORTED)
        return {true, DT_ERR_ABORTED, message};
    if (departure_only && status == DT_ERR_MISMATCH)
        return {true, DT_ERR_MISMATCH,
                cat("rank ", rank, " has destroyed its context after: ", message)};
    if (departure_only && calls_failed) // it failed because a peer left: pass that on
        return {true, DT_ERR_PEER_LOST,
                cat("rank ", rank, " has destroyed its context after: ", message)};
    if (departure_only)
        // A peer left while this rank had no call in flight, and none was made since:
        // every call it made completed, as on a clean exit. Failing a peer still in a
        // native collective with it would fail a collective that ran on every rank.
        return {true, DT_OK, cat("rank ", rank, " has destroyed its context, every call it "
                                 "made completed, after: ", message)};
    // Broken outside a collective (a lost connection seen while idle), where no failure
    // hook told the peers why: without this notice they would see only this rank's
    // connection close, and blame this rank instead of the one it lost.
    return {!notified, status, message};
}

} // namespace dt

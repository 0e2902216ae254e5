/* SPDX-License-Identifier: Apache-2.0 */
// Starting a transport's native collective and waiting for it: shared by the host
// transport's native path (path_native.cc) and the device transport's
// (path_device_native.cc).
#pragma once

#include "routing/path.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <memory>

namespace dt::routing {

// Starts a's collective on the plugin t; DTP_ERR_UNSUPPORTED also when the table has no
// such member. a.op is passed as it is (DT_AVG only where the caller wants the plugin to
// average).
int32_t start_native(const Transport &t, const Args &a, dt_transport_request_t *req);

// Ordered mode's call check on the transport's native collectives (runtime/call_check.h),
// before a native collective moves data, or before a point-to-point call where native
// ones serve the job's other calls (Router::dispatch). Fails the collective with
// DT_ERR_MISMATCH on disagreement. False when the transport declined the check's
// allreduce: the core's algorithms, which carry the check themselves, then run the call.
bool native_check_passes(algo::Comm &comm, const Args &a);

// Starts a native collective through `begin` and waits for it. False when the plugin
// declined the call (DTP_ERR_UNSUPPORTED).
template <typename Begin>
bool run_and_wait(algo::Comm &comm, const char *what, Begin &&begin)
{
    auto req = std::make_unique<algo::PendingTransfer>();
    req->peer = -1; // the whole job: Comm names the native collective in its errors
    req->raw.status = DTP_INPROGRESS;
    set_last_error("");
    int32_t rc = begin(&req->raw);
    if (rc == DTP_ERR_UNSUPPORTED) {
        set_last_error("");
        return false;
    }
    if (rc < 0) {
        DT_LOG(error, "runtime", what, ": native collective of transport '",
               comm.transport().name(), "' failed to start: ", last_error());
        req->raw.status = rc;
    }
    comm.wait(req);
    return true;
}

} // namespace dt::routing

// SPDX-License-Identifier: Apache-2.0
// dt_request_*: test, wait with a timeout, free.
#include "capi/guard.h"

using dt::capi::guard;
using dt::capi::require;

namespace {

// Returns the finished operation's status, setting the last error for a failure.
dt_status_t finished(const dt::Operation &op)
{
    dt_status_t status = op.status();
    if (status != DT_OK)
        dt::set_last_error(op.message());
    return status;
}

// Refuses a NULL request and a fork()ed child's copy of one, which no engine thread of
// the child completes (capi/guard.h).
void require_request(dt_request_h req, const char *function)
{
    require(req, function, "req");
    dt::capi::require_owner(req->creator, function, "request");
}

} // namespace

extern "C" {

DT_API dt_status_t dt_request_test(dt_request_h req, int *done)
{
    return guard([&] {
        require_request(req, "dt_request_test");
        require(done, "dt_request_test", "done");
        if (!req->op->done()) {
            *done = 0;
            return DT_OK;
        }
        *done = 1;
        return finished(*req->op);
    });
}

DT_API dt_status_t dt_request_wait(dt_request_h req, int timeout_ms)
{
    return guard([&] {
        require_request(req, "dt_request_wait");
        if (!req->op->wait(std::chrono::milliseconds(timeout_ms < 0 ? -1 : timeout_ms)))
            dt::throw_error(DT_ERR_TIMEOUT, req->op->desc().name, ": not complete after ",
                            timeout_ms, " ms; the request is still valid, wait again or "
                            "free it");
        return finished(*req->op);
    });
}

DT_API dt_status_t dt_request_free(dt_request_h req)
{
    return guard([&] {
        // A fork()ed child's copy is left as it is (as dt_context_destroy leaves the
        // context): no thread of the child completes it, and its operation is the
        // parent's, whose engine may still hold it; the memory is the child's own copy.
        if (req != nullptr && !dt::capi::owned_here(req->creator))
            return DT_OK;
        if (req != nullptr)
            req->op->wait(std::chrono::milliseconds(-1)); // never write after free
        delete req;
        return DT_OK;
    });
}

} // extern "C"

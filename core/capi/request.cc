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

} // namespace

extern "C" {

DT_API dt_status_t dt_request_test(dt_request_h req, int *done)
{
    return guard([&] {
        require(req, "dt_request_test", "req");
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
        require(req, "dt_request_wait", "req");
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
        if (req != nullptr)
            req->op->wait(std::chrono::milliseconds(-1)); // never write after free
        delete req;
        return DT_OK;
    });
}

} // extern "C"

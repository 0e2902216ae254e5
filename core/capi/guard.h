/* SPDX-License-Identifier: Apache-2.0 */
// The pattern of every extern "C" function: check arguments, call into dt::, catch
// everything, set the thread's last error, return a status. No exception leaves the ABI.
#pragma once

#include "runtime/error.h"

#include <disttrain/disttrain.h>

#include <new>

namespace dt::capi {

template <typename F>
dt_status_t guard(F &&body) noexcept
{
    try {
        return body();
    } catch (const Error &e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        set_last_error("out of memory");
        return DT_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        set_last_error(std::string("internal error: ") + e.what());
        return DT_ERR_INTERNAL;
    } catch (...) {
        set_last_error("internal error: unknown exception");
        return DT_ERR_INTERNAL;
    }
}

// Throws DT_ERR_INVALID_ARGUMENT "<function>: <what> must not be NULL" when p is null.
inline void require(const void *p, const char *function, const char *what)
{
    if (p == nullptr)
        throw_error(DT_ERR_INVALID_ARGUMENT, function, ": ", what, " must not be NULL");
}

} // namespace dt::capi

// Definitions behind the opaque handles of disttrain.h.
#include "runtime/context_view.h"

struct dt_context {
    std::unique_ptr<dt::ContextView> impl;
};

struct dt_request {
    std::shared_ptr<dt::Operation> op;
};

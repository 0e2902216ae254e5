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

// Throws DT_ERR_VERSION when a program compiled against API api_major.api_minor cannot
// use this library: another major version, or a newer minor one than it provides.
inline void require_api_version(int api_major, int api_minor)
{
    if (api_major != DT_API_MAJOR || api_minor > DT_API_MINOR)
        throw_error(DT_ERR_VERSION, "the program was compiled against libdisttrain API ",
                    api_major, ".", api_minor, " but the loaded library provides API ",
                    DT_API_MAJOR, ".", DT_API_MINOR, "; install a libdisttrain with the same "
                    "major version and a minor version at least ", api_minor);
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

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

// Definitions behind the opaque handles of disttrain.h. Each records the process that
// created it: a fork()ed child holds copies of them whose engine thread, sockets and
// shared memory belong to the parent (see owned_here below).
#include "capi/process_id.h"
#include "runtime/context_view.h"

struct dt_context {
    std::unique_ptr<dt::ContextView> impl;
    pid_t creator = dt::capi::this_process();
};

struct dt_request {
    std::shared_ptr<dt::Operation> op;
    pid_t creator = dt::capi::this_process();
};

namespace dt::capi {

// False in a fork()ed child for a handle its parent created. The child has a copy of the
// context's memory but not its engine thread (fork copies only the calling thread), and
// its copies of the sockets and shared memory segments are the parent's: any call on it
// would wait for a thread that never runs or write into the parent's connections.
inline bool owned_here(pid_t creator)
{
    return creator == this_process();
}

// Throws DT_ERR_INVALID_STATE naming the creating process when the calling process is
// not it (a fork()ed child), so that a call on a copied handle fails instead of hanging
// or breaking the parent's job.
inline void require_owner(pid_t creator, const char *function, const char *what)
{
    if (!owned_here(creator))
        throw_error(DT_ERR_INVALID_STATE, function, ": this ", what, " belongs to process ",
                    creator, ", and this is process ", this_process(), ", a child fork() "
                    "made of it; a forked child must create its own context: on its copy "
                    "of the parent's, only dt_context_destroy and dt_request_free work, "
                    "and they release nothing of the parent's");
}

// require() for ctx, then require_owner().
inline void require_context(dt_context_h ctx, const char *function)
{
    require(ctx, function, "ctx");
    require_owner(ctx->creator, function, "context");
}

} // namespace dt::capi

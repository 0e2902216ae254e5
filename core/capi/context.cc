// dt_context_*: creation with the API version check, destruction, abort, queries.
#include "capi/guard.h"

using dt::capi::guard;
using dt::capi::require;

namespace {

dt::Context &impl(dt_context_h ctx, const char *function)
{
    require(ctx, function, "ctx");
    return *ctx->impl;
}

template <typename T>
dt_status_t query(dt_context_h ctx, T *out, const char *function, T (*get)(dt::Context &))
{
    return guard([&] {
        dt::Context &c = impl(ctx, function);
        require(out, function, "output pointer");
        *out = get(c);
        return DT_OK;
    });
}

} // namespace

extern "C" {

DT_API dt_status_t dt_context_create_versioned(int api_major, int api_minor,
                                               const dt_context_params_t *params,
                                               dt_context_h *out)
{
    return guard([&] {
        if (api_major != DT_API_MAJOR || api_minor > DT_API_MINOR)
            dt::throw_error(DT_ERR_VERSION, "the program was compiled against libdisttrain "
                            "API ", api_major, ".", api_minor, " but the loaded library "
                            "provides API ", DT_API_MAJOR, ".", DT_API_MINOR,
                            "; install a libdisttrain with the same major version and a "
                            "minor version at least ", api_minor);
        require(out, "dt_context_create", "out");
        auto handle = std::make_unique<dt_context>();
        handle->impl = std::make_unique<dt::Context>(params);
        *out = handle.release();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_destroy(dt_context_h ctx)
{
    return guard([&] {
        delete ctx; // handles are owned by the caller through this pair of calls
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_abort(dt_context_h ctx)
{
    return guard([&] {
        impl(ctx, "dt_context_abort").abort();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_rank(dt_context_h ctx, int *rank)
{
    return query<int>(ctx, rank, "dt_context_rank", [](dt::Context &c) { return c.rank(); });
}

DT_API dt_status_t dt_context_size(dt_context_h ctx, int *size)
{
    return query<int>(ctx, size, "dt_context_size", [](dt::Context &c) { return c.size(); });
}

DT_API dt_status_t dt_context_local_rank(dt_context_h ctx, int *local_rank)
{
    return query<int>(ctx, local_rank, "dt_context_local_rank",
                      [](dt::Context &c) { return c.local_rank(); });
}

DT_API dt_status_t dt_context_local_size(dt_context_h ctx, int *local_size)
{
    return query<int>(ctx, local_size, "dt_context_local_size",
                      [](dt::Context &c) { return c.local_size(); });
}

DT_API dt_status_t dt_context_transport(dt_context_h ctx, const char **name)
{
    return query<const char *>(ctx, name, "dt_context_transport",
                               [](dt::Context &c) { return c.transport_name().c_str(); });
}

} // extern "C"

// SPDX-License-Identifier: Apache-2.0
// dt_context_*: creation with the API version check, destruction, abort, queries.
#include "capi/guard.h"

using dt::capi::guard;
using dt::capi::require;

namespace {

// The context behind ctx; refuses a NULL one and a fork()ed child's copy (capi/guard.h).
dt::ContextView &impl(dt_context_h ctx, const char *function)
{
    dt::capi::require_context(ctx, function);
    return *ctx->impl;
}

template <typename T>
dt_status_t query(dt_context_h ctx, T *out, const char *function, T (*get)(dt::ContextView &))
{
    return guard([&] {
        dt::ContextView &c = impl(ctx, function);
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
        dt::capi::require_api_version(api_major, api_minor);
        require(out, "dt_context_create", "out");
        auto handle = std::make_unique<dt_context>();
        handle->impl =
            std::make_unique<dt::ContextView>(std::make_shared<dt::Context>(params, api_minor));
        *out = handle.release();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_destroy(dt_context_h ctx)
{
    return guard([&] {
        // A fork()ed child's copy is left as it is: tearing it down would shut down and
        // write to the parent's sockets (its peers would see it leave), unlink the
        // parent's shared memory, and join or destroy the parent's engine thread, which
        // does not exist here (it waits forever). Its memory is this process's own copy,
        // so leaving it costs the child nothing that outlives it; its descriptors close
        // at exit, which (unlike shutdown) leaves the parent's connections open.
        if (ctx != nullptr && !dt::capi::owned_here(ctx->creator))
            return DT_OK;
        delete ctx; // handles are owned by the caller through this pair of calls
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_abort(dt_context_h ctx)
{
    return guard([&] {
        impl(ctx, "dt_context_abort").world().abort();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_rank(dt_context_h ctx, int *rank)
{
    return query<int>(ctx, rank, "dt_context_rank", [](dt::ContextView &c) { return c.rank(); });
}

DT_API dt_status_t dt_context_size(dt_context_h ctx, int *size)
{
    return query<int>(ctx, size, "dt_context_size", [](dt::ContextView &c) { return c.size(); });
}

DT_API dt_status_t dt_context_local_rank(dt_context_h ctx, int *local_rank)
{
    return query<int>(ctx, local_rank, "dt_context_local_rank",
                      [](dt::ContextView &c) { return c.local_rank(); });
}

DT_API dt_status_t dt_context_local_size(dt_context_h ctx, int *local_size)
{
    return query<int>(ctx, local_size, "dt_context_local_size",
                      [](dt::ContextView &c) { return c.local_size(); });
}

DT_API dt_status_t dt_context_transport(dt_context_h ctx, const char **name)
{
    return query<const char *>(ctx, name, "dt_context_transport",
                               [](dt::ContextView &c) { return c.world().transport_name().c_str(); });
}

DT_API dt_status_t dt_context_status(dt_context_h ctx)
{
    return guard([&] {
        auto err = impl(ctx, "dt_context_status").world().error();
        if (!err)
            return DT_OK;
        dt::set_last_error(err->second);
        return err->first;
    });
}

DT_API dt_status_t dt_group_create(dt_context_h parent, const int *ranks, int nranks,
                                   dt_context_h *out)
{
    return guard([&] {
        dt::ContextView &p = impl(parent, "dt_group_create");
        // A NULL ranks or out still takes part in the ranks' agreement, as a bad list
        // does, so that the other ranks fail at once instead of waiting for this one.
        auto view = dt::ContextView::create_group(
            p, ranks, nranks, out == nullptr ? "dt_group_create: out must not be NULL" : nullptr);
        if (!view) {
            *out = nullptr;
            return DT_OK;
        }
        auto handle = std::make_unique<dt_context>();
        handle->impl = std::move(view);
        *out = handle.release();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_reform(dt_context_h ctx)
{
    return guard([&] {
        dt::ContextView &c = impl(ctx, "dt_context_reform");
        if (c.group() != 0)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, "dt_context_reform: re-form the whole "
                            "job's context; its groups end with the old membership");
        c.world().reform();
        return DT_OK;
    });
}

DT_API dt_status_t dt_context_poll_joiners(dt_context_h ctx, int *waiting)
{
    return guard([&] {
        dt::ContextView &c = impl(ctx, "dt_context_poll_joiners");
        require(waiting, "dt_context_poll_joiners", "waiting");
        if (c.group() != 0)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, "dt_context_poll_joiners: ask the whole "
                            "job's context; groups do not take new ranks");
        // Rank 0 reads the store and every rank takes its answer, so all agree on
        // whether to re-form at this step.
        int64_t n = c.world().waiting_joiners();
        dt_status_t s = dt_broadcast(ctx, "dt_context_poll_joiners", &n, 1, DT_INT64, 0);
        if (s != DT_OK)
            return s;
        *waiting = static_cast<int>(std::min<int64_t>(n, INT32_MAX));
        return DT_OK;
    });
}

DT_API dt_status_t dt_join(dt_context_h ctx, int *last_joined_rank)
{
    return guard([&] {
        dt::ContextView &c = impl(ctx, "dt_join");
        if (c.group() != 0)
            dt::throw_error(DT_ERR_UNSUPPORTED, "dt_join: join works on the whole job's "
                            "context, not on a group");
        dt::OpDesc desc;
        desc.kind = dt::OpKind::join;
        desc.name = "join";
        auto op = c.submit(desc);
        op->wait(std::chrono::milliseconds(-1));
        if (op->status() != DT_OK)
            dt::throw_error(op->status(), op->message());
        if (last_joined_rank != nullptr)
            *last_joined_rank = static_cast<int>(op->result());
        return DT_OK;
    });
}

} // extern "C"

// The plugin's only exported symbol and its ops table. Each C entry point checks its
// arguments, calls the Context, and turns any exception into a DTP_ status plus a
// message for the core (services->set_error): nothing C++ crosses the ABI.
#include "mpi_context.h"
#include "mpi_error.h"
#include "mpi_runtime.h"

#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace dt::mpi {
namespace {

template <typename Fn>
int32_t guarded(const Host &host, Fn &&fn) {
    try {
        return fn();
    } catch (const MpiError &e) {
        host.set_error(e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        host.set_error("mpi: out of memory");
        return DTP_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        host.set_error(std::string("mpi: internal error: ") + e.what());
        return DTP_ERR_INTERNAL;
    }
}

Context *ctx(void *transport) { return static_cast<Context *>(transport); }

int32_t mpi_init(const dt_transport_init_args_t *args, void **transport) {
    if (args == nullptr || transport == nullptr || args->services == nullptr) {
        return DTP_ERR_INVALID_ARGUMENT;
    }
    dt_transport_init_args_t a{};
    std::memcpy(&a, args, std::min<size_t>(args->struct_size, sizeof(a)));
    Host host(a.host, a.services);
    if (args->struct_size < offsetof(dt_transport_init_args_t, services) + sizeof(void *) ||
        !host.complete()) {
        host.set_error("mpi: the core's init arguments or host services are too old for "
                       "this plugin (log and set_error are required)");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (a.size < 1 || a.rank < 0 || a.rank >= a.size) {
        host.set_error("mpi: invalid rank " + std::to_string(a.rank) + " of size " +
                       std::to_string(a.size));
        return DTP_ERR_INVALID_ARGUMENT;
    }
    return guarded(host, [&] {
        *transport = std::make_unique<Context>(a).release();
        return DTP_OK;
    });
}

int32_t mpi_finalize(void *transport) {
    // Taking ownership: the destructor fails pending requests and frees the communicators.
    std::unique_ptr<Context> owned(ctx(transport));
    return DTP_OK;
}

// Every other entry point: a NULL instance is a usage error, the rest goes to the Context.
template <typename Fn>
int32_t call(void *transport, Fn &&fn) {
    if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return guarded(ctx(transport)->host(), [&] { return fn(*ctx(transport)); });
}

int32_t mpi_isend(void *t, int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req) {
    return call(t, [&](Context &c) { return c.isend(peer, tag, buf, len, req); });
}

int32_t mpi_irecv(void *t, int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req) {
    return call(t, [&](Context &c) { return c.irecv(peer, tag, buf, len, req); });
}

int32_t mpi_progress(void *t, int32_t timeout_ms) {
    return call(t, [&](Context &c) { return c.progress(timeout_ms); });
}

int32_t mpi_abort(void *t) {
    return call(t, [&](Context &c) {
        c.abort();
        return DTP_OK;
    });
}

int32_t mpi_allreduce(void *t, const void *sendbuf, void *recvbuf, size_t count,
                      int32_t dtype, int32_t op, dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.allreduce(sendbuf, recvbuf, count, dtype, op, req); });
}

int32_t mpi_broadcast(void *t, void *buf, size_t count, int32_t dtype, int32_t root,
                      dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.broadcast(buf, count, dtype, root, req); });
}

int32_t mpi_allgather(void *t, const void *sendbuf, void *recvbuf, size_t sendcount,
                      int32_t dtype, dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.allgather(sendbuf, recvbuf, sendcount, dtype, req); });
}

int32_t mpi_reduce_scatter(void *t, const void *sendbuf, void *recvbuf, size_t recvcount,
                           int32_t dtype, int32_t op, dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) {
        return c.reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, req);
    });
}

int32_t mpi_alltoall(void *t, const void *sendbuf, void *recvbuf, size_t count,
                     int32_t dtype, dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.alltoall(sendbuf, recvbuf, count, dtype, req); });
}

int32_t mpi_barrier(void *t, dt_transport_request_t *req) {
    if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.barrier(req); });
}

const dt_transport_v2_t kOps = {
    sizeof(dt_transport_v2_t),
    DT_TRANSPORT_VERSION_2,
    "mpi",
    mpi_init,
    mpi_finalize,
    mpi_isend,
    mpi_irecv,
    mpi_progress,
    mpi_abort,
    mpi_allreduce,
    mpi_broadcast,
    mpi_allgather,
    mpi_reduce_scatter,
    mpi_alltoall,
    mpi_barrier,
};

} // namespace
} // namespace dt::mpi

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    if (offer == nullptr || answer == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    // Write only the fields the core's answer struct has room for.
    auto fits = [&](size_t end) { return answer->struct_size >= end; };
    const bool has_reason =
        fits(offsetof(dt_plugin_answer_t, decline_reason) + sizeof(const char *));
    if (has_reason) answer->decline_reason = nullptr;
    if (offer->max_ops_version < DT_TRANSPORT_VERSION_2 ||
        offer->min_ops_version > DT_TRANSPORT_VERSION_2) {
        if (has_reason) {
            answer->decline_reason =
                "the mpi transport speaks transport ops version 2 only; this core offers "
                "a range without it";
        }
        return DTP_ERR_UNSUPPORTED;
    }
    // Checked here, before MPI_Init could start a singleton MPI that has no peers.
    if (!dt::mpi::mpi_usable()) {
        if (has_reason) answer->decline_reason = dt::mpi::kNotLaunchedReason;
        return DTP_ERR_UNSUPPORTED;
    }
    if (!fits(offsetof(dt_plugin_answer_t, ops) + sizeof(const void *))) {
        return DTP_ERR_UNSUPPORTED;
    }
    answer->kind = DT_PLUGIN_KIND_TRANSPORT;
    answer->ops_version = DT_TRANSPORT_VERSION_2;
    answer->name = "mpi";
    answer->ops = &dt::mpi::kOps;
    return DTP_OK;
}

// The plugin's only exported symbol and its ops table. Each C entry point checks its
// arguments, calls the Context, and turns any exception into a DTP_ status plus a
// message for the core (services->set_error): nothing C++ crosses the ABI.
#include "tcp_context.h"
#include "tcp_error.h"

#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace dt::tcp {
namespace {

template <typename Fn>
int32_t guarded(const Host &host, Fn &&fn) {
    try {
        return fn();
    } catch (const TcpError &e) {
        host.set_error(e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        host.set_error("tcp: out of memory");
        return DTP_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        host.set_error(std::string("tcp: internal error: ") + e.what());
        return DTP_ERR_INTERNAL;
    }
}

Context *ctx(void *transport) { return static_cast<Context *>(transport); }

int32_t tcp_init(const dt_transport_init_args_t *args, void **transport) {
    if (args == nullptr || transport == nullptr || args->services == nullptr) {
        return DTP_ERR_INVALID_ARGUMENT;
    }
    dt_transport_init_args_t a{};
    std::memcpy(&a, args, std::min<size_t>(args->struct_size, sizeof(a)));
    Host host(a.host, a.services);
    if (args->struct_size < offsetof(dt_transport_init_args_t, services) + sizeof(void *) ||
        !host.complete()) {
        host.set_error("tcp: the core's init arguments or host services are too old for "
                       "this plugin (store, auth and random_bytes are required)");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (a.size < 1 || a.rank < 0 || a.rank >= a.size) {
        host.set_error("tcp: invalid rank " + std::to_string(a.rank) + " of size " +
                       std::to_string(a.size));
        return DTP_ERR_INVALID_ARGUMENT;
    }
    return guarded(host, [&] {
        *transport = std::make_unique<Context>(a).release();
        return DTP_OK;
    });
}

int32_t tcp_finalize(void *transport) {
    // Taking ownership: the destructor fails pending requests and closes everything,
    // once the peers have had the chance to read what we sent.
    std::unique_ptr<Context> owned(ctx(transport));
    if (owned) owned->close_gracefully(std::chrono::milliseconds(2000));
    return DTP_OK;
}

int32_t tcp_isend(void *transport, int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req) {
    if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return guarded(ctx(transport)->host(),
                   [&] { return ctx(transport)->isend(peer, tag, buf, len, req); });
}

int32_t tcp_irecv(void *transport, int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req) {
    if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return guarded(ctx(transport)->host(),
                   [&] { return ctx(transport)->irecv(peer, tag, buf, len, req); });
}

int32_t tcp_progress(void *transport, int32_t timeout_ms) {
    if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return guarded(ctx(transport)->host(), [&] { return ctx(transport)->progress(timeout_ms); });
}

int32_t tcp_abort(void *transport) {
    if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return guarded(ctx(transport)->host(), [&] {
        ctx(transport)->abort();
        return DTP_OK;
    });
}

// No native collectives: the core runs its algorithms over isend/irecv.
const dt_transport_v2_t kOps = {
    sizeof(dt_transport_v2_t),
    DT_TRANSPORT_VERSION_2,
    "tcp",
    tcp_init,
    tcp_finalize,
    tcp_isend,
    tcp_irecv,
    tcp_progress,
    tcp_abort,
    nullptr, // allreduce
    nullptr, // broadcast
    nullptr, // allgather
    nullptr, // reduce_scatter
    nullptr, // alltoall
    nullptr, // barrier
};

} // namespace
} // namespace dt::tcp

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    if (offer == nullptr || answer == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    // Write only the fields the core's answer struct has room for.
    auto fits = [&](size_t end) { return answer->struct_size >= end; };
    if (fits(offsetof(dt_plugin_answer_t, decline_reason) + sizeof(const char *))) {
        answer->decline_reason = nullptr;
    }
    if (offer->max_ops_version < DT_TRANSPORT_VERSION_2 ||
        offer->min_ops_version > DT_TRANSPORT_VERSION_2) {
        if (fits(offsetof(dt_plugin_answer_t, decline_reason) + sizeof(const char *))) {
            answer->decline_reason =
                "the tcp transport speaks transport ops version 2 only; this core offers "
                "a range without it";
        }
        return DTP_ERR_UNSUPPORTED;
    }
    if (!fits(offsetof(dt_plugin_answer_t, ops) + sizeof(const void *))) {
        return DTP_ERR_UNSUPPORTED;
    }
    answer->kind = DT_PLUGIN_KIND_TRANSPORT;
    answer->ops_version = DT_TRANSPORT_VERSION_2;
    answer->name = "tcp";
    answer->ops = &dt::tcp::kOps;
    return DTP_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
// The C side that every transport plugin shares (header-only: plugins never link the
// core or each other): entry points that check their arguments, call the plugin's
// Context, and turn any exception into a DTP_ status plus a message for the core
// (services->set_error), so nothing C++ crosses the ABI; and the answer to the core's
// offer.
//
// A plugin describes itself with a traits struct T:
//   using Context = ...;  // Context(const dt_transport_init_args_t &) throws T::Error;
//                         // host(), isend, irecv, progress(timeout_ms), abort()
//   using Host = ...;     // Host(void *host, const dt_host_services_t *), complete(),
//                         // set_error(std::string)
//   using Error = ...;    // an exception with status() (a DTP_ code) and what()
//   static constexpr const char *name;      // "tcp": the prefix of every message
//   static constexpr const char *services;  // the host services it needs, for messages
//   static void finalize(Context &);         // a clean finalize, before the destructor
//
// A plugin with native collectives also gives its Context allreduce, broadcast,
// allgather, reduce_scatter, alltoall and barrier (the ops' arguments, less the instance)
// and puts the entry points of the same names in its ops table.
//
// query answers host memory and control traffic (sockets, UCX tags and MPI calls read
// buffers with the CPU); a plugin that answers otherwise writes its answer with
// write_caps.
#pragma once

#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

namespace dtp {

template <class T>
struct TransportEntry {
    using Context = typename T::Context;
    using Host = typename T::Host;

    static Context *ctx(void *transport) { return static_cast<Context *>(transport); }

    template <typename Fn>
    static int32_t guarded(const Host &host, Fn &&fn) {
        try {
            return fn();
        } catch (const typename T::Error &e) {
            host.set_error(e.what());
            return e.status();
        } catch (const std::bad_alloc &) {
            host.set_error(std::string(T::name) + ": out of memory");
            return DTP_ERR_NO_MEMORY;
        } catch (const std::exception &e) {
            host.set_error(std::string(T::name) + ": internal error: " + e.what());
            return DTP_ERR_INTERNAL;
        }
    }

    // Every entry point but init: a NULL instance is a usage error, the rest goes to the
    // Context.
    template <typename Fn>
    static int32_t call(void *transport, Fn &&fn) {
        if (transport == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return guarded(ctx(transport)->host(), [&] { return fn(*ctx(transport)); });
    }

    static int32_t init(const dt_transport_init_args_t *args, void **transport) {
        if (args == nullptr || transport == nullptr || args->services == nullptr) {
            return DTP_ERR_INVALID_ARGUMENT;
        }
        // Only what the core's struct covers; the rest stays zero.
        dt_transport_init_args_t a{};
        std::memcpy(&a, args, std::min<size_t>(args->struct_size, sizeof(a)));
        Host host(a.host, a.services);
        if (args->struct_size < offsetof(dt_transport_init_args_t, services) + sizeof(void *) ||
            !host.complete()) {
            host.set_error(std::string(T::name) + ": the core's init arguments or host "
                           "services are too old for this plugin (" + T::services +
                           " are required)");
            return DTP_ERR_INVALID_ARGUMENT;
        }
        if (a.size < 1 || a.rank < 0 || a.rank >= a.size) {
            host.set_error(std::string(T::name) + ": invalid rank " + std::to_string(a.rank) +
                           " of size " + std::to_string(a.size));
            return DTP_ERR_INVALID_ARGUMENT;
        }
        return guarded(host, [&] {
            *transport = std::make_unique<Context>(a).release();
            return DTP_OK;
        });
    }

    static int32_t finalize(void *transport) {
        // Taking ownership: the plugin's clean finalize, then the destructor fails what
        // is pending and closes everything.
        std::unique_ptr<Context> owned(ctx(transport));
        if (owned) {
            try {
                T::finalize(*owned);
            } catch (const std::exception &e) {
                owned->host().set_error(std::string(T::name) + ": finalize: " + e.what());
            }
        }
        return DTP_OK;
    }

    static int32_t isend(void *t, int32_t peer, uint64_t tag, const void *buf, size_t len,
                         dt_transport_request_t *req) {
        return call(t, [&](Context &c) { return c.isend(peer, tag, buf, len, req); });
    }

    static int32_t irecv(void *t, int32_t peer, uint64_t tag, void *buf, size_t len,
                         dt_transport_request_t *req) {
        return call(t, [&](Context &c) { return c.irecv(peer, tag, buf, len, req); });
    }

    static int32_t progress(void *t, int32_t timeout_ms) {
        return call(t, [&](Context &c) { return c.progress(timeout_ms); });
    }

    // Native collectives: a NULL request is a usage error, the rest goes to the Context.
    static int32_t allreduce(void *t, const void *sendbuf, void *recvbuf, size_t count,
                             int32_t dtype, int32_t op, dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) {
            return c.allreduce(sendbuf, recvbuf, count, dtype, op, req);
        });
    }

    static int32_t broadcast(void *t, void *buf, size_t count, int32_t dtype, int32_t root,
                             dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) { return c.broadcast(buf, count, dtype, root, req); });
    }

    static int32_t allgather(void *t, const void *sendbuf, void *recvbuf, size_t sendcount,
                             int32_t dtype, dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) {
            return c.allgather(sendbuf, recvbuf, sendcount, dtype, req);
        });
    }

    static int32_t reduce_scatter(void *t, const void *sendbuf, void *recvbuf,
                                  size_t recvcount, int32_t dtype, int32_t op,
                                  dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) {
            return c.reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, req);
        });
    }

    static int32_t alltoall(void *t, const void *sendbuf, void *recvbuf, size_t count,
                            int32_t dtype, dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) { return c.alltoall(sendbuf, recvbuf, count, dtype, req); });
    }

    static int32_t barrier(void *t, dt_transport_request_t *req) {
        if (req == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        return call(t, [&](Context &c) { return c.barrier(req); });
    }

    // Writes a capability answer: only what fits the core's struct, after the header the
    // core set.
    static int32_t write_caps(void *t, dt_transport_caps_t *caps, uint32_t p2p_memory,
                              uint32_t native_memory, uint32_t flags) {
        constexpr size_t header = offsetof(dt_transport_caps_t, p2p_memory);
        if (t == nullptr || caps == nullptr || caps->struct_size < header) {
            return DTP_ERR_INVALID_ARGUMENT;
        }
        dt_transport_caps_t answer{};
        answer.p2p_memory = p2p_memory;
        answer.native_memory = native_memory;
        answer.flags = flags;
        const size_t size = std::min<size_t>(caps->struct_size, sizeof(answer));
        std::memcpy(reinterpret_cast<char *>(caps) + header,
                    reinterpret_cast<const char *>(&answer) + header, size - header);
        return DTP_OK;
    }

    // Host memory for point-to-point and native collectives, control traffic carried.
    static int32_t query(void *t, dt_transport_caps_t *caps) {
        return write_caps(t, caps, DT_TRANSPORT_MEMORY_HOST, DT_TRANSPORT_MEMORY_HOST,
                          DT_TRANSPORT_CAP_CONTROL);
    }

    static int32_t abort(void *t) {
        return call(t, [&](Context &c) {
            c.abort();
            return DTP_OK;
        });
    }

    // The ops table of a transport without native collectives (the core runs its
    // algorithms over isend/irecv); a plugin that has some fills them in.
    static constexpr dt_transport_v3_t point_to_point_ops() {
        return {sizeof(dt_transport_v3_t), DT_TRANSPORT_VERSION_3, T::name, init, finalize,
                isend, irecv, progress, abort, nullptr, nullptr, nullptr, nullptr, nullptr,
                nullptr, query, nullptr, nullptr, nullptr, nullptr, nullptr};
    }

    // The answer to the core's offer: ops version 3, or a decline with its reason.
    // unusable: why this plugin cannot serve this process (null when it can).
    static int32_t answer(const dt_plugin_offer_t *offer, dt_plugin_answer_t *answer,
                          const dt_transport_v3_t *ops, const char *unusable = nullptr) {
        if (offer == nullptr || answer == nullptr) return DTP_ERR_INVALID_ARGUMENT;
        // Write only the fields the core's answer struct has room for.
        auto fits = [&](size_t end) { return answer->struct_size >= end; };
        const bool has_reason =
            fits(offsetof(dt_plugin_answer_t, decline_reason) + sizeof(const char *));
        if (has_reason) answer->decline_reason = nullptr;
        if (offer->max_ops_version < DT_TRANSPORT_VERSION_3 ||
            offer->min_ops_version > DT_TRANSPORT_VERSION_3) {
            static const std::string reason =
                std::string("the ") + T::name + " transport speaks transport ops version 3 "
                "only; this core offers a range without it";
            if (has_reason) answer->decline_reason = reason.c_str();
            return DTP_ERR_UNSUPPORTED;
        }
        if (unusable != nullptr) {
            if (has_reason) answer->decline_reason = unusable;
            return DTP_ERR_UNSUPPORTED;
        }
        if (!fits(offsetof(dt_plugin_answer_t, ops) + sizeof(const void *))) {
            return DTP_ERR_UNSUPPORTED;
        }
        answer->kind = DT_PLUGIN_KIND_TRANSPORT;
        answer->ops_version = DT_TRANSPORT_VERSION_3;
        answer->name = T::name;
        answer->ops = ops;
        return DTP_OK;
    }
};

} // namespace dtp

// SPDX-License-Identifier: Apache-2.0
#include "runtime/host_services.h"

#include "runtime/error.h"
#include "runtime/transport_choice.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cstring>

namespace dt {

namespace {

HostBridge *bridge(void *host) { return static_cast<HostBridge *>(host); }

// Runs f, turning an exception into a status plus the thread's last error, since no
// exception may cross into a plugin.
template <typename F>
int32_t guarded(F &&f) noexcept
{
    try {
        f();
        return DTP_OK;
    } catch (const Error &e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::exception &e) {
        set_last_error(e.what());
        return DTP_ERR_INTERNAL;
    }
}

void host_log(void *, int level, const char *plugin, const char *message)
{
    level = std::clamp(level, DT_LOG_ERROR, DT_LOG_TRACE);
    auto lvl = static_cast<log::Level>(level);
    if (log::enabled(lvl))
        log::write(lvl, plugin != nullptr ? plugin : "plugin",
                   message != nullptr ? message : "");
}

void host_set_error(void *, const char *message)
{
    set_last_error(message != nullptr ? message : "");
}

int32_t host_store_set(void *host, const char *key, const void *value, size_t len)
{
    return guarded([&] {
        HostBridge *b = bridge(host);
        if (b == nullptr || b->store == nullptr || key == nullptr)
            throw_error(DT_ERR_INVALID_ARGUMENT, "store_set: no store or no key");
        b->store->set(b->key_prefix + key,
                      std::string(static_cast<const char *>(value), len));
    });
}

int32_t host_store_get(void *host, const char *key, void *buf, size_t cap, size_t *len,
                       int32_t timeout_ms)
{
    return guarded([&] {
        HostBridge *b = bridge(host);
        if (b == nullptr || b->store == nullptr || key == nullptr || len == nullptr)
            throw_error(DT_ERR_INVALID_ARGUMENT, "store_get: no store, key or len");
        // A negative wait is the context's timeout, whose 0 (DISTTRAIN_TIMEOUT=0) is no
        // limit; a plugin's own 0 looks once (plugin/common.h), as a plugin that polls
        // several keys in turn needs.
        auto timeout = std::chrono::milliseconds(timeout_ms);
        if (timeout_ms < 0)
            timeout = b->timeout.count() > 0 ? b->timeout : std::chrono::hours(24 * 365);
        std::string value;
        try {
            if (b->abandon_key.empty()) {
                value = b->store->get(b->key_prefix + key, timeout);
            } else {
                auto end = std::min(b->deadline, std::chrono::steady_clock::now() + timeout);
                std::string notice;
                try {
                    value = get_unless_abandoned(*b->store, b->key_prefix + key,
                                                 b->abandon_key, end, &notice);
                } catch (const Error &) {
                    if (!notice.empty())
                        b->given_up = notice;
                    throw;
                }
            }
        } catch (const Error &e) {
            // Plugins poll with short waits and read DTP_ERR_TIMEOUT as "not there yet": a
            // store that fell silent must not look like that, or each poll waits for it.
            if (e.status() == DT_ERR_TIMEOUT && b->store->lost())
                throw Error(DT_ERR_STORE, e.what());
            throw;
        }
        std::memcpy(buf, value.data(), std::min(cap, value.size()));
        *len = value.size();
    });
}

int32_t host_auth_sign(void *host, const void *data, size_t len, uint8_t mac[32])
{
    return guarded([&] {
        auto m = bridge(host)->auth->sign(data, len);
        std::memcpy(mac, m.data(), m.size());
    });
}

int32_t host_auth_verify(void *host, const void *data, size_t len, const uint8_t mac[32])
{
    bootstrap::Mac m;
    std::memcpy(m.data(), mac, m.size());
    return bridge(host)->auth->verify(data, len, m) ? DTP_OK : DTP_ERR_AUTH;
}

int32_t host_random_bytes(void *, void *buf, size_t len)
{
    return guarded([&] { bootstrap::Auth::random_bytes(buf, len); });
}

int32_t host_store_address(void *host, char *buf, size_t cap, size_t *len)
{
    return guarded([&] {
        HostBridge *b = bridge(host);
        if (b == nullptr || len == nullptr || (buf == nullptr && cap > 0))
            throw_error(DT_ERR_INVALID_ARGUMENT, "store_address: no host, len or buf");
        std::string addr = b->store != nullptr ? b->store->peer_address() : std::string();
        if (addr.empty())
            throw_error(DT_ERR_STORE, "store_address: this context has not reached its "
                        "rendezvous store yet");
        *len = addr.size();
        if (cap <= addr.size())
            throw_error(DT_ERR_INVALID_ARGUMENT, "store_address: the store's address '",
                        addr, "' needs ", addr.size() + 1, " bytes, the buffer has ", cap);
        std::memcpy(buf, addr.c_str(), addr.size() + 1);
    });
}

const dt_host_services_t kServices = {
    sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, host_log, host_set_error,
    host_store_set, host_store_get, host_auth_sign, host_auth_verify, host_random_bytes,
    host_store_address,
};

} // namespace

HostBridge::HostBridge(bootstrap::StoreClient *store_, const bootstrap::Auth *auth_,
                       std::string key_prefix_, std::chrono::milliseconds timeout_)
    : store(store_), auth(auth_), key_prefix(std::move(key_prefix_)), timeout(timeout_)
{
}

const dt_host_services_t *HostBridge::services() { return &kServices; }

} // namespace dt

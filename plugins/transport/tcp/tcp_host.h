/* SPDX-License-Identifier: Apache-2.0 */
// The host services this plugin calls (plugins/common/host_services.h): log, set_error,
// the store (listening addresses) and the job token's signatures and random bytes (the
// handshake that authenticates every connection); and, where the core offers it (it is
// optional), the store's address, towards which the default listening address is chosen.
#pragma once

#include <host_services.h>

#include <cstddef>
#include <cstdint>

namespace dt::tcp {

class Host : public dtp::HostServices {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services)
        : HostServices("tcp", host, services) {}

    bool complete() const {
        const dt_host_services_t &s = services();
        return s.log && s.set_error && s.store_set && s.store_get && s.auth_sign &&
               s.auth_verify && s.random_bytes;
    }

    int32_t sign(const void *data, size_t len, uint8_t mac[32]) const {
        return services().auth_sign(host(), data, len, mac);
    }
    bool verify(const void *data, size_t len, const uint8_t mac[32]) const {
        return services().auth_verify(host(), data, len, mac) == DTP_OK;
    }
    int32_t random_bytes(void *buf, size_t len) const {
        return services().random_bytes(host(), buf, len);
    }
};

} // namespace dt::tcp

/* SPDX-License-Identifier: Apache-2.0 */
// The host services the core lends this plugin, kept by value with the host pointer so
// every other file calls them as plain methods. Only the fields the core's struct_size
// covers are copied; init refuses a table that lacks any function we call.
#pragma once

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace dt::tcp {

class Host {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services) : host_(host) {
        if (services != nullptr) {
            std::memcpy(&s_, services, std::min<size_t>(services->struct_size, sizeof(s_)));
        }
    }

    // True when every function the plugin calls is present.
    bool complete() const {
        return s_.log && s_.set_error && s_.store_set && s_.store_get && s_.auth_sign &&
               s_.auth_verify && s_.random_bytes;
    }

    void log(int level, const std::string &message) const {
        if (s_.log) s_.log(host_, level, "tcp", message.c_str());
    }
    void set_error(const std::string &message) const {
        if (s_.set_error) s_.set_error(host_, message.c_str());
    }
    int32_t store_set(const std::string &key, const std::string &value) const {
        return s_.store_set(host_, key.c_str(), value.data(), value.size());
    }
    // DTP_OK and *value filled, or the store's status (DTP_ERR_TIMEOUT when absent).
    int32_t store_get(const std::string &key, std::string *value, int32_t timeout_ms) const {
        char buf[256];
        size_t len = 0;
        int32_t rc = s_.store_get(host_, key.c_str(), buf, sizeof(buf), &len, timeout_ms);
        if (rc == DTP_OK) value->assign(buf, std::min(len, sizeof(buf)));
        return rc;
    }
    int32_t sign(const void *data, size_t len, uint8_t mac[32]) const {
        return s_.auth_sign(host_, data, len, mac);
    }
    bool verify(const void *data, size_t len, const uint8_t mac[32]) const {
        return s_.auth_verify(host_, data, len, mac) == DTP_OK;
    }
    int32_t random_bytes(void *buf, size_t len) const {
        return s_.random_bytes(host_, buf, len);
    }

private:
    void *host_ = nullptr;
    dt_host_services_t s_{};
};

} // namespace dt::tcp

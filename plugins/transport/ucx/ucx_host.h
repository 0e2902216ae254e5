/* SPDX-License-Identifier: Apache-2.0 */
// The host services the core lends this plugin, kept by value with the host pointer so
// every other file calls them as plain methods. Only the fields the core's struct_size
// covers are copied; init refuses a table that lacks any function we call (log,
// set_error and the store, through which workers exchange their addresses).
#pragma once

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace dt::ucx {

class Host {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services) : host_(host) {
        if (services != nullptr) {
            std::memcpy(&s_, services, std::min<size_t>(services->struct_size, sizeof(s_)));
        }
    }

    // True when every function the plugin calls is present.
    bool complete() const { return s_.log && s_.set_error && s_.store_set && s_.store_get; }

    void log(int level, const std::string &message) const {
        if (s_.log) s_.log(host_, level, "ucx", message.c_str());
    }
    void set_error(const std::string &message) const {
        if (s_.set_error) s_.set_error(host_, message.c_str());
    }
    int32_t store_set(const std::string &key, const void *value, size_t len) const {
        return s_.store_set(host_, key.c_str(), value, len);
    }
    // DTP_OK and *value filled, or the store's status (DTP_ERR_TIMEOUT when absent).
    // Worker addresses run to a few hundred bytes; a longer value is read again whole.
    int32_t store_get(const std::string &key, std::string *value, int32_t timeout_ms) const {
        std::string buf(1024, '\0');
        size_t len = 0;
        int32_t rc = s_.store_get(host_, key.c_str(), buf.data(), buf.size(), &len, timeout_ms);
        if (rc == DTP_OK && len > buf.size()) {
            buf.assign(len, '\0');
            rc = s_.store_get(host_, key.c_str(), buf.data(), buf.size(), &len, timeout_ms);
        }
        if (rc == DTP_OK) value->assign(buf.data(), std::min(len, buf.size()));
        return rc;
    }

private:
    void *host_ = nullptr;
    dt_host_services_t s_{};
};

} // namespace dt::ucx

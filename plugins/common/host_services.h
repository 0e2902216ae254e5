/* SPDX-License-Identifier: Apache-2.0 */
// The host services the core lends a transport plugin, kept by value with the host
// pointer so every other file of the plugin calls them as plain methods. Only the fields
// the core's struct_size covers are copied; each plugin's Host (a subclass) says in
// complete() which functions it calls, and init refuses a table that lacks one.
#pragma once

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace dtp {

class HostServices {
public:
    HostServices() = default;
    // plugin: the name every log line carries ("tcp").
    HostServices(const char *plugin, void *host, const dt_host_services_t *services)
        : plugin_(plugin), host_(host) {
        if (services != nullptr) {
            std::memcpy(&s_, services, std::min<size_t>(services->struct_size, sizeof(s_)));
        }
    }

    void log(int level, const std::string &message) const {
        if (s_.log) s_.log(host_, level, plugin_, message.c_str());
    }
    void set_error(const std::string &message) const {
        if (s_.set_error) s_.set_error(host_, message.c_str());
    }

    int32_t store_set(const std::string &key, const void *value, size_t len) const {
        return s_.store_set(host_, key.c_str(), value, len);
    }
    int32_t store_set(const std::string &key, const std::string &value) const {
        return store_set(key, value.data(), value.size());
    }
    // Waits up to timeout_ms (< 0: the context's timeout) for key. DTP_OK and *value the
    // whole value (a longer one than the first read took is read again), or the store's
    // status (DTP_ERR_TIMEOUT when the key did not appear).
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

    // The numeric "ip:port" at which this process reaches the rendezvous store; empty
    // where the core does not offer it (an older core's shorter table) or has none yet.
    std::string store_address() const {
        if (!s_.store_address) return {};
        char buf[128] = {};
        size_t len = 0;
        if (s_.store_address(host_, buf, sizeof(buf), &len) != DTP_OK || len >= sizeof(buf)) {
            return {};
        }
        return std::string(buf, len);
    }

protected:
    const dt_host_services_t &services() const { return s_; }
    void *host() const { return host_; }

private:
    const char *plugin_ = "";
    void *host_ = nullptr;
    dt_host_services_t s_{};
};

} // namespace dtp

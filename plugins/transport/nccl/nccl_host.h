/* SPDX-License-Identifier: Apache-2.0 */
// The host services the core lends this plugin, kept by value with the host pointer so
// every other file calls them as plain methods. Only the fields the core's struct_size
// covers are copied. NCCL needs the store: the ranks vote on whether they can all run it
// and rank 0 hands out NCCL's unique id through it.
#pragma once

#include "nccl_error.h"

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace dt::nccl {

class Host {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services) : host_(host) {
        if (services != nullptr) {
            std::memcpy(&s_, services, std::min<size_t>(services->struct_size, sizeof(s_)));
        }
    }

    bool complete() const { return s_.log && s_.set_error && s_.store_set && s_.store_get; }

    void log(int level, const std::string &message) const {
        if (s_.log) s_.log(host_, level, "nccl", message.c_str());
    }
    void set_error(const std::string &message) const {
        if (s_.set_error) s_.set_error(host_, message.c_str());
    }

    void put(const std::string &key, const std::string &value) const {
        int32_t rc = s_.store_set(host_, key.c_str(), value.data(), value.size());
        if (rc != DTP_OK) {
            throw NcclError(DTP_ERR_STORE, "nccl: storing '" + key + "' in the rendezvous "
                            "store failed (status " + std::to_string(rc) + ")");
        }
    }

    // Waits up to timeout_ms (< 0: the context's timeout) for key; throws on a timeout
    // or a store failure, naming `what` (what the key holds, for the message).
    std::string get(const std::string &key, int32_t timeout_ms, const std::string &what) const {
        std::string value(256, '\0');
        size_t len = 0;
        int32_t rc = s_.store_get(host_, key.c_str(), value.data(), value.size(), &len,
                                  timeout_ms);
        if (rc == DTP_OK && len > value.size()) {
            value.resize(len);
            rc = s_.store_get(host_, key.c_str(), value.data(), value.size(), &len, timeout_ms);
        }
        if (rc == DTP_ERR_TIMEOUT) {
            throw NcclError(DTP_ERR_TIMEOUT, "nccl: " + what + " did not appear in the "
                            "rendezvous store within " + std::to_string(timeout_ms) +
                            " ms (is that rank running?)");
        }
        if (rc != DTP_OK) {
            throw NcclError(DTP_ERR_STORE, "nccl: reading " + what + " from the rendezvous "
                            "store failed (status " + std::to_string(rc) + ")");
        }
        value.resize(std::min(len, value.size()));
        return value;
    }

private:
    void *host_ = nullptr;
    dt_host_services_t s_{};
};

} // namespace dt::nccl

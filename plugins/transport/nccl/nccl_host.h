/* SPDX-License-Identifier: Apache-2.0 */
// The host services this plugin calls (plugins/common/host_services.h). NCCL needs the
// store: the ranks vote on whether they can all run it and rank 0 hands out NCCL's unique
// id through it.
#pragma once

#include "nccl_error.h"

#include <host_services.h>

#include <string>

namespace dt::nccl {

class Host : public dtp::HostServices {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services)
        : HostServices("nccl", host, services) {}

    bool complete() const {
        const dt_host_services_t &s = services();
        return s.log && s.set_error && s.store_set && s.store_get;
    }

    void put(const std::string &key, const std::string &value) const {
        int32_t rc = store_set(key, value);
        if (rc != DTP_OK) {
            throw NcclError(DTP_ERR_STORE, "nccl: storing '" + key + "' in the rendezvous "
                            "store failed (status " + std::to_string(rc) + ")");
        }
    }

    // Waits up to timeout_ms (< 0: the context's timeout) for key; throws on a timeout
    // or a store failure, naming `what` (what the key holds, for the message).
    std::string get(const std::string &key, int32_t timeout_ms, const std::string &what) const {
        std::string value;
        int32_t rc = store_get(key, &value, timeout_ms);
        if (rc == DTP_ERR_TIMEOUT) {
            throw NcclError(DTP_ERR_TIMEOUT, "nccl: " + what + " did not appear in the "
                            "rendezvous store within " + std::to_string(timeout_ms) +
                            " ms (is that rank running?)");
        }
        if (rc != DTP_OK) {
            throw NcclError(DTP_ERR_STORE, "nccl: reading " + what + " from the rendezvous "
                            "store failed (status " + std::to_string(rc) + ")");
        }
        return value;
    }
};

} // namespace dt::nccl

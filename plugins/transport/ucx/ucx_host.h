/* SPDX-License-Identifier: Apache-2.0 */
// The host services this plugin calls (plugins/common/host_services.h): log, set_error
// and the store, through which workers exchange their addresses.
#pragma once

#include <host_services.h>

namespace dt::ucx {

class Host : public dtp::HostServices {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services)
        : HostServices("ucx", host, services) {}

    bool complete() const {
        const dt_host_services_t &s = services();
        return s.log && s.set_error && s.store_set && s.store_get;
    }
};

} // namespace dt::ucx

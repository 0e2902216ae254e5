/* SPDX-License-Identifier: Apache-2.0 */
// The host services this plugin calls (plugins/common/host_services.h). MPI wires the
// ranks up itself, so the plugin needs only log and set_error: no store, no job token.
#pragma once

#include <host_services.h>

namespace dt::mpi {

class Host : public dtp::HostServices {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services)
        : HostServices("mpi", host, services) {}

    bool complete() const { return services().log && services().set_error; }
};

} // namespace dt::mpi

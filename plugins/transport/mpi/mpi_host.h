/* SPDX-License-Identifier: Apache-2.0 */
// The host services the core lends this plugin, kept by value with the host pointer so
// every other file calls them as plain methods. Only the fields the core's struct_size
// covers are copied. MPI wires the ranks up itself, so the plugin needs only log and
// set_error: no store, no job token.
#pragma once

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace dt::mpi {

class Host {
public:
    Host() = default;
    Host(void *host, const dt_host_services_t *services) : host_(host) {
        if (services != nullptr) {
            std::memcpy(&s_, services, std::min<size_t>(services->struct_size, sizeof(s_)));
        }
    }

    bool complete() const { return s_.log && s_.set_error; }

    void log(int level, const std::string &message) const {
        if (s_.log) s_.log(host_, level, "mpi", message.c_str());
    }
    void set_error(const std::string &message) const {
        if (s_.set_error) s_.set_error(host_, message.c_str());
    }

private:
    void *host_ = nullptr;
    dt_host_services_t s_{};
};

} // namespace dt::mpi

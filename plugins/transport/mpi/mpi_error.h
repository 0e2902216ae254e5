/* SPDX-License-Identifier: Apache-2.0 */
// The one exception type inside the plugin. It carries the DTP_ status the C entry points
// return; its message is handed to the core through services->set_error. Nothing thrown
// here ever crosses the C ABI (mpi_plugin.cc catches everything).
#pragma once

#include <disttrain/plugin/common.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dt::mpi {

class MpiError : public std::runtime_error {
public:
    MpiError(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const { return status_; }

private:
    int32_t status_;
};

// MPI's own text for an MPI error code ("MPI_ERR_TRUNCATE: message truncated").
std::string mpi_error_text(int code);

// The DTP_ status an MPI error code means for the core: truncation is a protocol error
// (the ranks disagree on a size), everything else a transport failure.
int32_t status_of(int mpi_code);

// Throws MpiError(status_of(rc), "mpi: <what> failed: <MPI's text>") unless rc is
// MPI_SUCCESS; an error also marks this process's MPI as failed (mark_failed).
void check(int rc, const char *what);

} // namespace dt::mpi

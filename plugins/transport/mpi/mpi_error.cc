// SPDX-License-Identifier: Apache-2.0
#include "mpi_error.h"

#include "mpi_runtime.h"

#include <mpi.h>

namespace dt::mpi {

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) {
        return "MPI error " + std::to_string(code);
    }
    return std::string(text, static_cast<size_t>(len));
}

int32_t status_of(int mpi_code) {
    int cls = mpi_code;
    MPI_Error_class(mpi_code, &cls);
    return cls == MPI_ERR_TRUNCATE ? DTP_ERR_PROTOCOL : DTP_ERR_TRANSPORT;
}

void check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return;
    mark_failed();
    throw MpiError(status_of(rc), std::string("mpi: ") + what + " failed: " + mpi_error_text(rc));
}

} // namespace dt::mpi

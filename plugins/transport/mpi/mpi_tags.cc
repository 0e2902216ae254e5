// SPDX-License-Identifier: Apache-2.0
#include "mpi_tags.h"

#include "mpi_error.h"

namespace dt::mpi {

TagSpace::TagSpace() {
    int flag = 0;
    int *ub = nullptr;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && ub != nullptr && *ub >= 32767) tag_ub_ = *ub;
    for (auto &c : comms_) c = MPI_COMM_NULL;
    try {
        for (auto &c : comms_) {
            check(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
            check(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        }
    } catch (...) {
        for (auto &c : comms_) {
            if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        }
        throw;
    }
}

TagSpace::~TagSpace() {
    for (auto &c : comms_) {
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    }
}

TagSpace::Mapped TagSpace::map(uint64_t tag) const {
    uint64_t cls = tag >> 40;
    if (cls >= kClasses) cls = kClasses - 1;
    uint64_t low = cls == kClasses - 1 ? tag : tag & ((uint64_t(1) << 40) - 1);
    return {comms_[cls], static_cast<int>(low % (static_cast<uint64_t>(tag_ub_) + 1))};
}

} // namespace dt::mpi

// Where a process learns its rank: explicit params first, then the DISTTRAIN_* variables
// that disttrainrun sets, then Open MPI's OMPI_COMM_WORLD_*, then MPICH/PMI's PMI_*, then
// Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID. Size 1 with no variables at all is a
// single-process job.
#pragma once

#include <disttrain/disttrain.h>

#include <string>

namespace dt::bootstrap {

struct RankInfo {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    std::string source; // "params", "DISTTRAIN_*", "Open MPI", "PMI", "Slurm", "default"
};

// Throws DT_ERR_INVALID_CONFIG for malformed numbers (naming the variable) and for
// inconsistent values (rank >= size, local_rank >= local_size, size < 1).
RankInfo discover_ranks(const dt_context_params_t *params);

} // namespace dt::bootstrap

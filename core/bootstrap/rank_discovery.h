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
                        // ("params + Slurm" etc. when params set only some fields)
    // False when no source gave the local rank/size and they were defaulted to rank/size
    // (as if every rank ran on this host); the runtime may work out the real ones.
    bool local_known = true;
};

// Each field comes from params when its field_mask bit is set, else from the first
// launcher above whose variables are present (read as a whole: a partial set is an
// error). Throws DT_ERR_INVALID_CONFIG for malformed numbers (naming the variable), for a
// launcher's variable set without its partner, and for inconsistent values (rank >= size,
// local_rank >= local_size, local_size > size, size < 1).
RankInfo discover_ranks(const dt_context_params_t *params);

} // namespace dt::bootstrap

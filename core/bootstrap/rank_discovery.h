/* SPDX-License-Identifier: Apache-2.0 */
// Where a process learns its rank: explicit params first, then the DISTTRAIN_* variables
// that disttrainrun sets, then torchrun's (env://) RANK/WORLD_SIZE/LOCAL_RANK/
// LOCAL_WORLD_SIZE, then TF_CONFIG, then Open MPI's OMPI_COMM_WORLD_*, then MPICH/PMI's
// PMI_*, then Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID. Size 1 with no variables
// at all is a single-process job.
//
// Per-host launchers come before job-wide ones because they are the ones started inside
// the others (srun or mpirun starting torchrun). torchrun, TF_CONFIG, Open MPI and PMI
// found together must agree on rank and size unless the earlier one has more ranks (it
// is nested); otherwise it is an error naming both. DISTTRAIN_* wins silently over all:
// disttrainrun may itself run under any of them, and a user sets it on purpose.
#pragma once

#include <disttrain/disttrain.h>

#include <cstdint>
#include <string>

namespace dt::bootstrap {

// The most ranks a job may have: a larger DISTTRAIN_SIZE (or WORLD_SIZE, ...) is refused,
// and so is disttrainrun -np above it.
inline constexpr int64_t kMaxRanks = 1 << 20; // 1048576

struct RankInfo {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    std::string source; // "params", "DISTTRAIN_*", "torchrun (env://)", "TF_CONFIG",
                        // "Open MPI", "PMI", "Slurm", "default"
                        // ("params + Slurm" etc. when params set only some fields)
    // False when no source gave the local rank/size and they were defaulted to rank/size
    // (as if every rank ran on this host); the runtime may work out the real ones.
    bool local_known = true;
    // The store address the launcher's own variables give (multi-rank jobs only):
    // torchrun's MASTER_ADDR:MASTER_PORT+1, TF_CONFIG's first member. Empty otherwise.
    std::string store_addr;
    std::string store_from; // the variables it came from, for messages
    // How to give the store another port in those variables, for a port already taken.
    std::string store_port_hint;
};

// Each field comes from params when its field_mask bit is set, else from the first
// launcher above whose variables are present (read as a whole: a partial set is an
// error). Throws DT_ERR_INVALID_CONFIG for malformed numbers (naming the variable), for a
// launcher's variable set without its partner, and for inconsistent values (rank >= size,
// local_rank >= local_size, local_size > size, size < 1).
RankInfo discover_ranks(const dt_context_params_t *params);

} // namespace dt::bootstrap

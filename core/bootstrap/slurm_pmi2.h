/* SPDX-License-Identifier: Apache-2.0 */
// The rendezvous of a job that srun started with neither DISTTRAIN_STORE_ADDR nor
// DISTTRAIN_JOB_TOKEN: Slurm's own PMI2 key-value space carries them. Rank 0 opens the
// store on a port it binds itself and puts its address and a fresh random token; every
// rank fences; the others get both. The key-value space belongs to the job step alone
// (srun's step daemons serve it over the socket each task inherits), so the secret never
// leaves the job.
//
// PMI2 comes from Slurm's libpmi2.so.0, loaded at run time (pmi2_library.h); it is there
// when srun runs with --mpi=pmi2 (or slurm.conf says MpiDefault=pmi2). Without it the job
// fails at start-up with a message saying how to start it instead.
#pragma once

#include "bootstrap/pmi2_library.h"
#include "bootstrap/rank_discovery.h"
#include "bootstrap/store.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace dt::bootstrap {

struct SlurmRendezvous {
    std::string store_addr;
    std::string token;
    std::unique_ptr<StoreServer> server; // rank 0 only: already listening at store_addr
};

// True when the ranks were read from srun's variables: source "Slurm" (SLURM_PROCID,
// SLURM_NTASKS) or "PMI" (the PMI_RANK and PMI_SIZE that srun --mpi=pmi2 sets) with
// SLURM_PROCID and SLURM_NTASKS giving the same rank and size (and, for PMI, SLURM_STEP_ID
// set: a task of a job step). False for ranks given in params or by any other launcher.
bool ranks_from_slurm(const RankInfo &ranks);

// One process's connection to srun's PMI2 server. Slurm's client may be initialised only
// once per process, so every rendezvous of the process goes through one session.
// Every PMI2 call is bounded by a timeout: the library's calls have none of their own, and
// a rank that never reaches the fence would hold the others there for ever. A call that
// times out is left blocked on its own thread and the session refuses further use.
class Pmi2Session {
public:
    // PMI2_Init, then checks that PMI2's rank and size are the given ones and reads the
    // job id. Throws DT_ERR_CONNECT, with what to do instead, when PMI2_Init fails;
    // DT_ERR_INVALID_CONFIG when PMI2 disagrees on rank or size; DT_ERR_TIMEOUT when a
    // call does not answer within timeout (<= 0: no limit).
    Pmi2Session(std::shared_ptr<Pmi2Library> library, int rank, int size, Millis timeout);

    // One rendezvous. Rank 0 listens at bind_addr ("host:port", port 0 for a free one)
    // and returns its server. Each call uses its own keys, so each context of the process
    // gets its own store (contexts are created in the same order on every rank). Throws
    // DT_ERR_STORE when a PMI2 call fails, DT_ERR_TIMEOUT when the fence or a call does
    // not complete within timeout, DT_ERR_INVALID_STATE after an earlier timeout.
    SlurmRendezvous rendezvous(const std::string &bind_addr, Millis timeout);

private:
    std::shared_ptr<Pmi2Library> library_;
    int rank_ = 0;
    int size_ = 1;
    std::string job_id_;
    int next_round_ = 0;
    std::mutex mutex_;
    std::shared_ptr<std::atomic<bool>> stuck_ = std::make_shared<std::atomic<bool>>(false);
};

// The rendezvous for rank ranks.rank of ranks.size through this process's session (made
// by the first call, with Pmi2Library::default_path()). Rank 0 binds 127.0.0.1 when the
// job step runs on one node (SLURM_STEP_NUM_NODES=1), every interface otherwise. Throws
// DT_ERR_INVALID_CONFIG when PMI2 is not available: not an srun task (no SLURM_STEP_ID),
// no PMI2 server (no PMI_FD), or the library missing; that message and the ones above say
// to use srun --mpi=pmi2, or to set DISTTRAIN_STORE_ADDR and DISTTRAIN_JOB_TOKEN, or to run
// disttrainrun. DT_ERR_INVALID_STATE after a PMI2_Init that timed out.
SlurmRendezvous rendezvous_through_slurm_pmi2(const RankInfo &ranks, Millis timeout);

} // namespace dt::bootstrap

/* SPDX-License-Identifier: Apache-2.0 */
// Everything a context reads at start-up, from its params struct and the environment,
// checked once so that a bad value is an error at dt_context_create and never later.
#pragma once

#include "bootstrap/rank_discovery.h"
#include "bootstrap/store.h"
#include "routing/policy.h"

#include <disttrain/disttrain.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dt {

struct ContextConfig {
    bootstrap::RankInfo ranks;
    std::string store_addr;          // empty: none given
    std::string store_from = "DISTTRAIN_STORE_ADDR"; // where store_addr came from
    // What to change there when rank 0 cannot listen at store_addr, for messages.
    std::string store_port_hint = "give DISTTRAIN_STORE_ADDR a free port, the same on every rank";
    // Where rank 0's store listens when it is not store_addr itself: all interfaces at
    // its port (runtime/store_listen.h says when). Empty: store_addr.
    std::string store_bind;
    bool launcher_serves_store = false; // DISTTRAIN_STORE_SERVER=launcher
    // Rank 0's store when it had to listen before its address could be published (Slurm
    // PMI2); the context takes it over. Null otherwise.
    std::unique_ptr<bootstrap::StoreServer> store_server;
    std::string job_token;           // empty: none given
    std::string token_from = "DISTTRAIN_JOB_TOKEN"; // where job_token came from
    // The token was derived from the launcher's variables (torchrun's run id, Slurm's
    // PMI2), not chosen by the user: the same on every rank of the job by construction.
    bool token_derived = false;
    // DISTTRAIN_JOB_ID: the job's own part of a store that several jobs share (one served
    // outside them); its keys go under "job/<id>/". Empty: none.
    std::string job_id;
    // dt_context_params_t.name: how the same context of every rank finds the others, in
    // any order (context_naming.h). Empty: unnamed, paired by creation order.
    std::string name;
    // Every rank serves itself a private in-process store: a job started by mpirun with
    // no DISTTRAIN_STORE_ADDR, whose transport (mpi) wires the ranks up by itself.
    bool private_store = false;
    std::vector<std::string> transports; // ordered; "auto" expanded by the loader
    // DISTTRAIN_DEVICE_TRANSPORT: a device-only transport (nccl) opened beside the host
    // transport for collectives on device memory, or "none" (staging through the host).
    std::string device_transport = "none";
    std::string memory = "none"; // DISTTRAIN_MEMORY: the memory provider's name, or none
    const char *memory_from = "DISTTRAIN_MEMORY"; // where memory came from, for messages
    std::chrono::milliseconds timeout{0}; // 0: no limit
    int64_t fusion_threshold = 64 << 20;  // bytes (used by the engine)
    int64_t cycle_time_ms = 1;
    bool ordered = false; // DISTTRAIN_ORDERED: no negotiation, run in submission order
    // DISTTRAIN_ELASTIC: a lost peer ends the current membership, not the job; the
    // survivors call dt_context_reform (runtime/elastic_membership.h).
    bool elastic = false;
    int min_size = 1; // DISTTRAIN_MIN_SIZE: the fewest ranks a re-formed job may have
    // DISTTRAIN_ELASTIC_JOIN=1 (a launcher's replacement): join the running job at its
    // next re-form instead of starting one.
    bool elastic_join = false;
    std::chrono::milliseconds elastic_settle{1000}; // DISTTRAIN_ELASTIC_SETTLE_MS
    // DISTTRAIN_LAUNCH_ID: how the launcher names this process in its death notices
    // (runtime/death_notices.h); -1: not given.
    int64_t launch_id = -1;
    routing::Policy policy; // how collectives run: DISTTRAIN_ALGORITHM, DISTTRAIN_SHM*
};

// Throws DT_ERR_INVALID_CONFIG naming the variable or param, the value and what is
// allowed. api_minor: the DT_API_MINOR the caller was compiled against, whose params
// struct ends before the fields appended in later minors: those are not read.
ContextConfig read_config(const dt_context_params_t *params, int api_minor = DT_API_MINOR);

} // namespace dt

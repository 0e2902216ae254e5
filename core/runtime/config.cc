// SPDX-License-Identifier: Apache-2.0
#include "runtime/config.h"

#include "bootstrap/slurm_pmi2.h"
#include "bootstrap/store.h"
#include "runtime/context_naming.h"
#include "runtime/env.h"
#include "runtime/error.h"
#include "runtime/store_listen.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cctype>

namespace dt {

namespace {

bool has(const dt_context_params_t *p, uint64_t bit)
{
    return p != nullptr && (p->field_mask & bit) != 0;
}

std::vector<std::string> parse_transports(const std::string &what, const std::string &value)
{
    auto names = env::split_list(value);
    if (names.empty())
        throw_error(DT_ERR_INVALID_CONFIG, what, "='", value,
                    "' names no transport; use a comma-separated list such as "
                    "'tcp' or 'ucx,tcp', or 'auto'");
    for (const auto &name : names) {
        bool valid = std::all_of(name.begin(), name.end(), [](unsigned char c) {
            return std::islower(c) || std::isdigit(c) || c == '_';
        });
        if (!valid)
            throw_error(DT_ERR_INVALID_CONFIG, what, "='", value, "': '", name,
                        "' is not a transport name; names are lowercase letters, digits "
                        "and '_' (e.g. tcp, ucx, mpi, nccl) or 'auto'");
    }
    return names;
}

// DISTTRAIN_MEMORY: one memory provider's name, or "none". Checked here so a typo fails
// dt_context_create before any plugin is looked for.
std::string parse_memory(const char *what, const std::string &value)
{
    bool valid = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return std::islower(c) || std::isdigit(c) || c == '_';
    });
    if (!valid)
        throw_error(DT_ERR_INVALID_CONFIG, what, "='", value, "' is not a memory "
                    "provider's name; use one name of lowercase letters, digits and '_' "
                    "(e.g. cuda), or 'none' for host memory only");
    return value;
}

bool mpi_only(const ContextConfig &cfg)
{
    return cfg.transports == std::vector<std::string>{"mpi"};
}

// DISTTRAIN_JOB_ID becomes part of every store key of the job: a short name of safe
// characters, so that no value can reach into another job's keys.
std::string parse_job_id(const std::string &value)
{
    bool valid = !value.empty() && value.size() <= 128 &&
                 std::all_of(value.begin(), value.end(), [](unsigned char c) {
                     return std::isalnum(c) || c == '.' || c == '_' || c == '-';
                 });
    if (!valid)
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_JOB_ID='", value, "' is not a job id; "
                    "use 1 to 128 letters, digits, '.', '_' or '-', the same on every rank "
                    "of the job and another for each job (e.g. $(uuidgen))");
    return value;
}

// A job that mpirun started, with no store given (bare `mpirun -np N prog`): MPI already
// wires the ranks up, so with the mpi transport no shared store is needed and each rank
// gets a private one. "auto" means mpi here, the one transport that can work without a
// store. Any other choice keeps the store requirement (and its error below). Under srun
// only an explicit DISTTRAIN_TRANSPORT=mpi takes this path (MPI then wires itself through
// srun's PMIx or PMI2), although srun --mpi=pmi2 sets the same PMI_RANK as mpirun's
// Hydra: "auto" meets through Slurm's PMI2 instead (meet_through_slurm).
bool mpi_without_store(ContextConfig &cfg)
{
    const std::string &src = cfg.ranks.source;
    bool mpi_launch = bootstrap::ranks_from_slurm(cfg.ranks)
                          ? mpi_only(cfg)
                          : src.find("Open MPI") != std::string::npos ||
                                src.find("PMI") != std::string::npos;
    if (cfg.ranks.size <= 1 || !cfg.store_addr.empty() || !mpi_launch)
        return false;
    if (cfg.transports == std::vector<std::string>{"auto"})
        cfg.transports = {"mpi"};
    return mpi_only(cfg);
}

// torchrun gives no secret. TORCHELASTIC_RUN_ID is its --rdzv-id: a random UUID under
// --standalone, otherwise whatever the user chose, and "none" by default. It is used as
// the token only when it looks like a chosen unguessable id (16 characters or more, not
// "none"); anything else would authenticate nothing, so the job is refused instead.
std::string token_from_torchrun()
{
    auto id = env::get("TORCHELASTIC_RUN_ID");
    if (id && *id != "none" && id->size() >= 16)
        return *id;
    throw_error(DT_ERR_INVALID_CONFIG,
                "DISTTRAIN_JOB_TOKEN is not set and this torchrun (env://) job has no usable "
                "secret: TORCHELASTIC_RUN_ID is ",
                id ? cat("'", *id, "'") : std::string("unset"),
                " (it is used only when 16 characters or more and not 'none', e.g. "
                "torchrun --standalone or --rdzv-id=$(uuidgen)); export the same "
                "DISTTRAIN_JOB_TOKEN=$(openssl rand -hex 32) on every rank");
}

// srun started the ranks and nobody gave a store or a token: they meet through Slurm's
// PMI2 (bootstrap/slurm_pmi2.h). What is set by hand is used as given, never replaced by
// PMI2's, so a store or a token alone is an error naming the other, here where the cause
// is known. An explicit DISTTRAIN_TRANSPORT=mpi keeps the store-less MPI path below, as
// under mpirun.
void meet_through_slurm(ContextConfig &cfg)
{
    if (cfg.ranks.size <= 1 || cfg.launcher_serves_store ||
        !bootstrap::ranks_from_slurm(cfg.ranks) || mpi_only(cfg))
        return;
    if (cfg.store_addr.empty() != cfg.job_token.empty()) {
        bool store_given = !cfg.store_addr.empty();
        const std::string &given = store_given ? cfg.store_from : cfg.token_from;
        throw_error(DT_ERR_INVALID_CONFIG, given, " is set but ",
                    store_given ? "DISTTRAIN_JOB_TOKEN" : "DISTTRAIN_STORE_ADDR",
                    " is not (rank ", cfg.ranks.rank, " of ", cfg.ranks.size, " from srun); "
                    "a store address or token set by hand is used as given, so set both "
                    "on every rank (DISTTRAIN_STORE_ADDR=host:port of rank 0 and the same "
                    "DISTTRAIN_JOB_TOKEN=$(openssl rand -hex 32)), or neither, and the "
                    "ranks meet through Slurm's PMI2");
    }
    if (!cfg.store_addr.empty())
        return;
    bootstrap::SlurmRendezvous met =
        bootstrap::rendezvous_through_slurm_pmi2(cfg.ranks, cfg.timeout);
    cfg.store_addr = met.store_addr;
    cfg.job_token = met.token;
    cfg.store_server = std::move(met.server);
    cfg.store_from = cfg.token_from = "Slurm PMI2";
    cfg.token_derived = true;
    DT_LOG(info, "config", "rank, store and token from Slurm PMI2: rank ", cfg.ranks.rank,
           " of ", cfg.ranks.size, ", store at ", cfg.store_addr);
}

} // namespace

ContextConfig read_config(const dt_context_params_t *params, int api_minor)
{
    ContextConfig cfg;
    cfg.ranks = bootstrap::discover_ranks(params);

    if (api_minor >= 4 && has(params, DT_CONTEXT_PARAM_FIELD_NAME)) {
        if (params->name == nullptr)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_context_params_t.name is NULL while "
                        "field_mask has DT_CONTEXT_PARAM_FIELD_NAME; set a name, or clear "
                        "the bit for an unnamed context");
        cfg.name = check_context_name("dt_context_params_t.name", params->name);
    }

    bool launcher_given = false; // the store address came from a launcher's variables
    if (has(params, DT_CONTEXT_PARAM_FIELD_STORE_ADDR) && params->store_addr != nullptr) {
        cfg.store_addr = params->store_addr;
        cfg.store_from = "dt_context_params_t.store_addr";
        cfg.store_port_hint = "give dt_context_params_t.store_addr a free port, the same on "
                              "every rank";
    } else if (auto v = env::get("DISTTRAIN_STORE_ADDR")) {
        cfg.store_addr = *v;
    } else if (!cfg.ranks.store_addr.empty()) {
        cfg.store_addr = cfg.ranks.store_addr;
        cfg.store_from = cfg.ranks.store_from;
        cfg.store_port_hint = cat(cfg.ranks.store_port_hint, ", or set DISTTRAIN_STORE_ADDR="
                                  "host:port with a free port on every rank");
        launcher_given = true;
    }
    // Checked here, where its source is known: rank 0 binds it and the others connect to
    // it, and either would otherwise name it by its role only ("store bind address").
    if (!cfg.store_addr.empty())
        bootstrap::parse_host_port(cfg.store_from, cfg.store_addr);

    if (auto v = env::get("DISTTRAIN_STORE_SERVER")) {
        if (*v == "launcher")
            cfg.launcher_serves_store = true;
        else if (*v != "rank0")
            throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_STORE_SERVER='", *v,
                        "' is not known; use 'launcher' (disttrainrun serves the store) or "
                        "'rank0' (rank 0 serves it at DISTTRAIN_STORE_ADDR)");
    }
    if (cfg.ranks.rank == 0 && !cfg.launcher_serves_store && !cfg.store_addr.empty()) {
        StoreListen listen = store_listen_address(cfg.store_from, cfg.store_addr, launcher_given,
                                                  cfg.ranks.local_size, cfg.ranks.size);
        cfg.store_bind = listen.bind;
        if (!listen.why.empty())
            DT_LOG(info, "config", listen.why);
    }

    if (has(params, DT_CONTEXT_PARAM_FIELD_JOB_TOKEN) && params->job_token != nullptr) {
        cfg.job_token = params->job_token;
        cfg.token_from = "dt_context_params_t.job_token";
    } else if (auto v = env::get("DISTTRAIN_JOB_TOKEN")) {
        cfg.job_token = *v;
    } else if (cfg.ranks.source == "torchrun (env://)" && cfg.ranks.size > 1) {
        cfg.job_token = token_from_torchrun();
        cfg.token_from = "TORCHELASTIC_RUN_ID";
        cfg.token_derived = true;
    }

    if (auto v = env::get("DISTTRAIN_JOB_ID"))
        cfg.job_id = parse_job_id(*v);

    if (has(params, DT_CONTEXT_PARAM_FIELD_TRANSPORT) && params->transport != nullptr)
        cfg.transports = parse_transports("params.transport", params->transport);
    else
        cfg.transports =
            parse_transports("DISTTRAIN_TRANSPORT",
                             env::get("DISTTRAIN_TRANSPORT").value_or("auto"));

    if (auto v = env::get("DISTTRAIN_DEVICE_TRANSPORT")) {
        auto names = parse_transports("DISTTRAIN_DEVICE_TRANSPORT", *v);
        if (names.size() != 1)
            throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_DEVICE_TRANSPORT='", *v,
                        "' must name one device transport (e.g. nccl), auto (nccl where "
                        "every rank has a GPU of its own, staging otherwise) or none");
        cfg.device_transport = names[0];
    }

    if (api_minor >= 1 && has(params, DT_CONTEXT_PARAM_FIELD_MEMORY) &&
        params->memory != nullptr) {
        cfg.memory_from = "dt_context_params_t.memory";
        cfg.memory = parse_memory(cfg.memory_from, params->memory);
    } else {
        cfg.memory =
            parse_memory("DISTTRAIN_MEMORY", env::get("DISTTRAIN_MEMORY").value_or("none"));
    }

    if (has(params, DT_CONTEXT_PARAM_FIELD_TIMEOUT_MS))
        cfg.timeout = std::chrono::milliseconds(std::max(0, params->timeout_ms));
    else
        cfg.timeout = std::chrono::seconds(
            env::get_int("DISTTRAIN_TIMEOUT", 300, 0, 7 * 24 * 3600));

    cfg.fusion_threshold =
        env::get_int("DISTTRAIN_FUSION_THRESHOLD", cfg.fusion_threshold, 0, int64_t(1) << 40);
    cfg.cycle_time_ms = env::get_int("DISTTRAIN_CYCLE_TIME_MS", cfg.cycle_time_ms, 0, 60000);
    if (has(params, DT_CONTEXT_PARAM_FIELD_ORDERED))
        cfg.ordered = params->ordered != 0;
    else
        cfg.ordered = env::get_int("DISTTRAIN_ORDERED", 0, 0, 1) == 1;

    cfg.policy = routing::read_policy();

    cfg.elastic = env::get_int("DISTTRAIN_ELASTIC", 0, 0, 1) == 1;
    cfg.min_size = static_cast<int>(env::get_int("DISTTRAIN_MIN_SIZE", 1, 1, INT32_MAX));
    cfg.elastic_join = cfg.elastic && env::get_int("DISTTRAIN_ELASTIC_JOIN", 0, 0, 1) == 1;
    cfg.elastic_settle = std::chrono::milliseconds(
        env::get_int("DISTTRAIN_ELASTIC_SETTLE_MS", cfg.elastic_settle.count(), 0, 3600000));
    cfg.launch_id = env::get_int("DISTTRAIN_LAUNCH_ID", -1, 0, INT64_MAX);
    // Rank 0 may be the one lost: the store the survivors meet in must outlive every rank.
    if (cfg.elastic && cfg.ranks.size > 1 && !cfg.launcher_serves_store)
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ELASTIC=1 needs a rendezvous store "
                    "that outlives every rank, and here rank 0 would serve it: start the job "
                    "with disttrainrun --elastic (which serves the store), or serve one "
                    "outside the job and set DISTTRAIN_STORE_ADDR and "
                    "DISTTRAIN_STORE_SERVER=launcher");

    meet_through_slurm(cfg);
    cfg.private_store = mpi_without_store(cfg);
    if (cfg.ranks.size > 1 && cfg.store_addr.empty() && !cfg.private_store)
        throw_error(DT_ERR_INVALID_CONFIG, "this is rank ", cfg.ranks.rank, " of ",
                    cfg.ranks.size, " (from ", cfg.ranks.source,
                    ") but DISTTRAIN_STORE_ADDR is not set; start the job with "
                    "disttrainrun, or set DISTTRAIN_STORE_ADDR=host:port of rank 0 on "
                    "every rank (torchrun: MASTER_ADDR and MASTER_PORT; under mpirun, "
                    "DISTTRAIN_TRANSPORT=mpi needs no store)");
    if (cfg.ranks.size > 1 && cfg.job_token.empty() && !cfg.private_store)
        throw_error(DT_ERR_INVALID_CONFIG,
                    "DISTTRAIN_JOB_TOKEN is not set (rank ", cfg.ranks.rank, " of ",
                    cfg.ranks.size, " from ", cfg.ranks.source, "); every rank of a "
                    "multi-process job "
                    "must share a secret token: start the job with disttrainrun (which "
                    "makes one) or export the same DISTTRAIN_JOB_TOKEN=$(openssl rand -hex "
                    "32) on every rank");
    return cfg;
}

} // namespace dt

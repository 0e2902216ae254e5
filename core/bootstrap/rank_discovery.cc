// SPDX-License-Identifier: Apache-2.0
// discover_ranks(): each field (rank, size, local rank, local size) comes from the params
// when its field_mask bit is set, otherwise from the first launcher whose variables are
// present, in the order of rank_discovery.h. One launcher is read as a unit: a partial set
// of its variables is an error naming the missing one, never a silent mix of launchers.
//
// A launcher is "present" when: DISTTRAIN_* any of its four variables is set (the user or
// disttrainrun set them on purpose); torchrun when RANK or WORLD_SIZE is set; TF_CONFIG
// when it is set (a malformed one is an error, not skipped); Open MPI / PMI its rank or
// size is set; Slurm when
// SLURM_PROCID is set (salloc and sbatch shells carry SLURM_NTASKS for a whole allocation
// without being a task of a job step, so SLURM_NTASKS alone does not count).
//
// Local rank/size: when no source knows them, they default to rank/size (as if every rank
// were on this host) and RankInfo::local_known is false. That keeps per-host choices such
// as the GPU index (= local_rank) distinct for single-host jobs started with params or by
// a PMI without MPI_LOCALRANKID; the runtime can refine them through the store.
#include "bootstrap/rank_discovery.h"

#include "bootstrap/tf_config.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <string>

namespace dt::bootstrap {

namespace {

struct Field {
    int value = 0;
    std::string name; // where it came from, for messages
    bool known = false;
};

struct Fields {
    Field rank, size, local_rank, local_size;
};

Field from_env(const char *var, int64_t min, int64_t max)
{
    Field f;
    if (auto v = env::get(var)) {
        f.value = static_cast<int>(env::parse_int(var, *v, min, max));
        f.name = var;
        f.known = true;
    }
    return f;
}

Field env_rank(const char *var) { return from_env(var, 0, kMaxRanks - 1); }
Field env_count(const char *var) { return from_env(var, 1, kMaxRanks); }

// Both or neither of a pair: one alone is an error naming the other.
void require_pair(const Field &a, const char *a_var, const Field &b, const char *b_var,
                  const char *source)
{
    if (a.known == b.known)
        return;
    const char *set = a.known ? a_var : b_var;
    const char *unset = a.known ? b_var : a_var;
    throw_error(DT_ERR_INVALID_CONFIG, set, " is set but ", unset, " is not; ", source,
                " must give both (unset ", set, " if this process is not started by ", source,
                ")");
}

// SLURM_TASKS_PER_NODE looks like "4" or "2(x3),1": tasks per node, first node first. The
// first number is taken: it is this node's count on homogeneous allocations, which is what
// data-parallel jobs use; SLURM_NTASKS_PER_NODE, when set, is exact and wins.
Field slurm_tasks_per_node()
{
    Field f = env_count("SLURM_NTASKS_PER_NODE");
    if (f.known)
        return f;
    auto v = env::get("SLURM_TASKS_PER_NODE");
    if (!v)
        return f;
    size_t digits = 0;
    while (digits < v->size() && std::isdigit(static_cast<unsigned char>((*v)[digits])))
        ++digits;
    if (digits == 0 || digits > 7 ||
        (digits < v->size() && (*v)[digits] != '(' && (*v)[digits] != ','))
        throw_error(DT_ERR_INVALID_CONFIG, "SLURM_TASKS_PER_NODE='", *v,
                    "' is not a Slurm task count; expected e.g. '4' or '2(x3),1'");
    f.value = static_cast<int>(env::parse_int("SLURM_TASKS_PER_NODE", v->substr(0, digits), 1,
                                              kMaxRanks));
    f.name = "SLURM_TASKS_PER_NODE";
    f.known = true;
    return f;
}

// A launcher that gives rank, size, local rank and local size in four variables: present
// when either of the first two is set, each pair required whole.
struct LauncherVariables {
    const char *rank, *size, *local_rank, *local_size;
    const char *who, *local_who; // names the launcher in messages about each pair
};

std::optional<Fields> read_launcher(const LauncherVariables &v, bool (*set)(const char *))
{
    if (!set(v.rank) && !set(v.size))
        return std::nullopt;
    Fields f{env_rank(v.rank), env_count(v.size), env_rank(v.local_rank),
             env_count(v.local_size)};
    require_pair(f.rank, v.rank, f.size, v.size, v.who);
    require_pair(f.local_rank, v.local_rank, f.local_size, v.local_size, v.local_who);
    return f;
}

// torchrun / torch.distributed's env:// variables. MASTER_ADDR/MASTER_PORT give the
// store's address (see store_from_torchrun); they are not needed to know the rank.
std::optional<Fields> read_torchrun(bool (*set)(const char *))
{
    return read_launcher({"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                          "torchrun (env://)", "torchrun (env://)"},
                         set);
}

std::optional<Fields> read_tf_config(bool (*set)(const char *))
{
    if (!set("TF_CONFIG"))
        return std::nullopt;
    TfConfig tf = parse_tf_config("TF_CONFIG", *env::get("TF_CONFIG"));
    if (static_cast<int64_t>(tf.members.size()) > kMaxRanks)
        throw_error(DT_ERR_INVALID_CONFIG, "TF_CONFIG lists ", tf.members.size(),
                    " members; at most ", kMaxRanks, " ranks are supported");
    return Fields{{tf.rank, "TF_CONFIG task.index", true},
                  {static_cast<int>(tf.members.size()), "TF_CONFIG cluster size", true},
                  {tf.local_rank, "TF_CONFIG local rank", true},
                  {tf.local_size, "TF_CONFIG local size", true}};
}

std::optional<Fields> read_ompi(bool (*set)(const char *))
{
    return read_launcher({"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                          "Open MPI", "Open MPI"},
                         set);
}

std::optional<Fields> read_pmi(bool (*set)(const char *))
{
    return read_launcher({"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
                          "the MPI launcher (PMI)", "the MPI launcher (Hydra)"},
                         set);
}

bool is_set(const char *var) { return env::get(var).has_value(); }

// The launchers that may be found together and must then agree, in precedence order.
// Slurm is not among them: its variables are inherited by everything started inside an
// allocation (a torchrun or mpirun in a batch script), so they say nothing about the
// process itself once another launcher is present.
struct Launcher {
    const char *name;
    std::optional<Fields> (*read)(bool (*)(const char *));
};
constexpr Launcher kCheckedLaunchers[] = {{"torchrun (env://)", read_torchrun},
                                          {"TF_CONFIG", read_tf_config},
                                          {"Open MPI", read_ompi},
                                          {"PMI", read_pmi}};

// The chosen launcher `chosen` (index into kCheckedLaunchers) against every other one
// that is present. A launcher started per host by another (torchrun under mpirun or srun)
// has more ranks than its parent has tasks; that nesting is allowed and the inner one, which
// comes first, wins. Otherwise both must give the same rank and size.
void check_conflicts(size_t chosen, const Fields &f)
{
    for (size_t i = 0; i < std::size(kCheckedLaunchers); ++i) {
        if (i == chosen)
            continue;
        std::optional<Fields> other;
        try {
            other = kCheckedLaunchers[i].read(is_set);
        } catch (const Error &) {
            continue; // not usable as a source: it cannot contradict the one in use
        }
        if (!other)
            continue;
        const Fields &inner = i < chosen ? *other : f;
        const Fields &outer = i < chosen ? f : *other;
        if (inner.size.value > outer.size.value)
            continue; // nested: per-host launcher under a job-wide one
        if (other->rank.value == f.rank.value && other->size.value == f.size.value)
            continue;
        const Fields &a = i < chosen ? *other : f;
        const Fields &b = i < chosen ? f : *other;
        const char *a_name = kCheckedLaunchers[std::min(i, chosen)].name;
        const char *b_name = kCheckedLaunchers[std::max(i, chosen)].name;
        throw_error(DT_ERR_INVALID_CONFIG, "conflicting launchers: ", a_name, " says rank ",
                    a.rank.value, " of ", a.size.value, " (", a.rank.name, "=", a.rank.value,
                    ", ", a.size.name, "=", a.size.value, ") but ", b_name, " says rank ",
                    b.rank.value, " of ", b.size.value, " (", b.rank.name, "=", b.rank.value,
                    ", ", b.size.name, "=", b.size.value, "); unset the variables of the "
                    "one that did not start this process, or set DISTTRAIN_RANK and "
                    "DISTTRAIN_SIZE (which win over every launcher)");
    }
}

// Reads the first launcher that is present; nullopt when none is.
std::optional<Fields> read_launcher(std::string &source)
{
    auto set = is_set;
    Fields f;
    if (set("DISTTRAIN_RANK") || set("DISTTRAIN_SIZE") || set("DISTTRAIN_LOCAL_RANK") ||
        set("DISTTRAIN_LOCAL_SIZE")) {
        source = "DISTTRAIN_*";
        f = {env_rank("DISTTRAIN_RANK"), env_count("DISTTRAIN_SIZE"),
             env_rank("DISTTRAIN_LOCAL_RANK"), env_count("DISTTRAIN_LOCAL_SIZE")};
        require_pair(f.rank, "DISTTRAIN_RANK", f.size, "DISTTRAIN_SIZE", "disttrainrun");
        if (!f.rank.known)
            throw_error(DT_ERR_INVALID_CONFIG,
                        "DISTTRAIN_LOCAL_RANK or DISTTRAIN_LOCAL_SIZE is set but neither "
                        "DISTTRAIN_RANK nor DISTTRAIN_SIZE is; set all four (disttrainrun does)");
        require_pair(f.local_rank, "DISTTRAIN_LOCAL_RANK", f.local_size,
                     "DISTTRAIN_LOCAL_SIZE", "disttrainrun");
        return f;
    }
    for (size_t i = 0; i < std::size(kCheckedLaunchers); ++i) {
        if (auto found = kCheckedLaunchers[i].read(set)) {
            source = kCheckedLaunchers[i].name;
            check_conflicts(i, *found);
            return found;
        }
    }
    if (set("SLURM_PROCID")) {
        source = "Slurm";
        f = {env_rank("SLURM_PROCID"), env_count("SLURM_NTASKS"), env_rank("SLURM_LOCALID"), {}};
        require_pair(f.rank, "SLURM_PROCID", f.size, "SLURM_NTASKS", "srun");
        if (f.local_rank.known) {
            f.local_size = slurm_tasks_per_node();
            if (!f.local_size.known)
                throw_error(DT_ERR_INVALID_CONFIG,
                            "SLURM_LOCALID is set but neither SLURM_NTASKS_PER_NODE nor "
                            "SLURM_TASKS_PER_NODE is; srun sets them, so start the job "
                            "with srun or set DISTTRAIN_* instead");
        }
        return f;
    }
    return std::nullopt;
}

// MASTER_ADDR and MASTER_PORT + 1 (MASTER_PORT itself is torch's own store: torchrun's
// agent serves it, and so does rank 0 of a program that calls init_process_group).
std::string store_from_torchrun(std::string &from)
{
    auto addr = env::get("MASTER_ADDR");
    auto port = env::get("MASTER_PORT");
    if (!addr && !port)
        return {};
    if (!addr || !port)
        throw_error(DT_ERR_INVALID_CONFIG, addr ? "MASTER_ADDR" : "MASTER_PORT",
                    " is set but ", addr ? "MASTER_PORT" : "MASTER_ADDR",
                    " is not; torchrun (env://) sets both");
    int64_t p = env::parse_int("MASTER_PORT", *port, 1, 65534);
    from = cat("MASTER_ADDR:MASTER_PORT+1 (", *addr, ":", *port, ")");
    bool v6 = addr->find(':') != std::string::npos;
    return cat(v6 ? "[" : "", *addr, v6 ? "]" : "", ":", p + 1);
}

Field from_params(const dt_context_params_t *params, uint64_t bit, int value, const char *name,
                  int64_t min)
{
    Field f;
    if (params == nullptr || !(params->field_mask & bit))
        return f;
    if (value < min || value > (min == 0 ? kMaxRanks - 1 : kMaxRanks))
        throw_error(DT_ERR_INVALID_CONFIG, "dt_context_params_t.", name, "=", value,
                    " is out of range; expected an integer in [", min, ", ",
                    min == 0 ? kMaxRanks - 1 : kMaxRanks, "]");
    f.value = value;
    f.name = cat("dt_context_params_t.", name);
    f.known = true;
    return f;
}

// Returns whether it took the launcher's value.
bool fill(Field &target, const Field &from)
{
    if (target.known || !from.known)
        return false;
    target = from;
    return true;
}

void check_below(const Field &index, const Field &count, const char *what)
{
    if (index.value >= count.value)
        throw_error(DT_ERR_INVALID_CONFIG, index.name, "=", index.value, " is not below ",
                    count.name, "=", count.value, "; ", what, " are numbered 0..",
                    count.value - 1);
}

} // namespace

RankInfo discover_ranks(const dt_context_params_t *params)
{
    Fields f{
        from_params(params, DT_CONTEXT_PARAM_FIELD_RANK, params ? params->rank : 0, "rank", 0),
        from_params(params, DT_CONTEXT_PARAM_FIELD_SIZE, params ? params->size : 0, "size", 1),
        from_params(params, DT_CONTEXT_PARAM_FIELD_LOCAL_RANK, params ? params->local_rank : 0,
                    "local_rank", 0),
        from_params(params, DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE, params ? params->local_size : 0,
                    "local_size", 1)};
    const bool any_params =
        f.rank.known || f.size.known || f.local_rank.known || f.local_size.known;
    const bool all_params =
        f.rank.known && f.size.known && f.local_rank.known && f.local_size.known;

    std::string launcher;
    std::optional<Fields> env;
    if (!all_params)
        env = read_launcher(launcher);
    bool used_env = false;
    if (env) {
        used_env |= fill(f.rank, env->rank);
        used_env |= fill(f.size, env->size);
        used_env |= fill(f.local_rank, env->local_rank);
        used_env |= fill(f.local_size, env->local_size);
    }

    RankInfo info;
    bool single_process = false;
    if (!f.rank.known && !f.size.known) {
        // Nothing anywhere: a single process (local fields may still come from params).
        f.rank = {0, "the default rank", true};
        f.size = {1, "the default size", true};
        single_process = true;
    } else if (!f.rank.known || !f.size.known) {
        const char *missing = f.rank.known ? "size" : "rank";
        throw_error(DT_ERR_INVALID_CONFIG, (f.rank.known ? f.rank : f.size).name,
                    " is given but no ", missing, " is: set DT_CONTEXT_PARAM_FIELD_",
                    f.rank.known ? "SIZE" : "RANK", " in dt_context_params_t or DISTTRAIN_",
                    f.rank.known ? "SIZE" : "RANK");
    }
    if (f.local_rank.known != f.local_size.known) {
        const Field &known = f.local_rank.known ? f.local_rank : f.local_size;
        throw_error(DT_ERR_INVALID_CONFIG, known.name, " is given but no local ",
                    f.local_rank.known ? "size" : "rank",
                    " is: set DT_CONTEXT_PARAM_FIELD_LOCAL_RANK and _LOCAL_SIZE together");
    }
    // A lone process knows it is alone on its host.
    info.local_known = f.local_rank.known || single_process;
    if (!f.local_rank.known) {
        f.local_rank = {f.rank.value, "local rank (defaulted to the rank)", true};
        f.local_size = {f.size.value, "local size (defaulted to the size)", true};
    }
    check_below(f.rank, f.size, "ranks");
    check_below(f.local_rank, f.local_size, "local ranks");
    if (f.local_size.value > f.size.value)
        throw_error(DT_ERR_INVALID_CONFIG, f.local_size.name, "=", f.local_size.value,
                    " is larger than ", f.size.name, "=", f.size.value,
                    "; a host cannot hold more ranks than the job has");

    info.rank = f.rank.value;
    info.size = f.size.value;
    info.local_rank = f.local_rank.value;
    info.local_size = f.local_size.value;
    // Where the store is, when the launcher in use says (DISTTRAIN_STORE_ADDR and the
    // params still win, in read_config). A lone process needs none.
    if (used_env && info.size > 1) {
        if (launcher == "torchrun (env://)") {
            info.store_addr = store_from_torchrun(info.store_from);
            info.store_port_hint = "give the job another MASTER_PORT (torchrun "
                                   "--master-port, or the port of --rdzv-endpoint) whose next "
                                   "port is free too";
        } else if (launcher == "TF_CONFIG") {
            TfConfig tf = parse_tf_config("TF_CONFIG", *env::get("TF_CONFIG"));
            info.store_addr = tf.members.front();
            info.store_from = cat("TF_CONFIG's first member (", tf.members.front(), ")");
            info.store_port_hint = "give the first member of TF_CONFIG a free port";
        }
    }
    if (!any_params)
        info.source = used_env ? launcher : "default";
    else if (!used_env)
        info.source = "params";
    else
        info.source = "params + " + launcher;
    return info;
}

} // namespace dt::bootstrap

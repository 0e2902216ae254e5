// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/slurm_pmi2.h"

#include "bootstrap/auth.h"
#include "runtime/env.h"
#include "runtime/error.h"

#include <functional>
#include <future>
#include <thread>
#include <vector>

namespace dt::bootstrap {

namespace {

constexpr const char *kWhatToDo =
    "; start the job with srun --mpi=pmi2 (e.g. srun --mpi=pmi2 -n 4 prog, or set "
    "MpiDefault=pmi2 in slurm.conf), or export the same DISTTRAIN_STORE_ADDR=host:port and "
    "DISTTRAIN_JOB_TOKEN=$(openssl rand -hex 32) on every rank, or run disttrainrun -np N "
    "prog inside the allocation";

constexpr const char *kServerHint =
    ": srun's PMI2 server (the step daemon) does not answer this task";
constexpr const char *kFenceHint =
    ": every rank of the job step must reach PMI2_KVS_Fence, and some did not (a rank "
    "failed or is still busy before creating its context, or the ranks create different "
    "numbers of contexts); the job's other output says which";

// Runs step on a thread of its own and waits for it up to timeout (<= 0: no limit). On
// timeout the thread stays blocked where it is (nothing can interrupt a PMI2 call), holding
// only what it shares with the caller, and the session is marked stuck.
template <typename T>
T within(Millis timeout, const std::shared_ptr<std::atomic<bool>> &stuck,
         const std::string &what, const char *hint, std::function<T()> step)
{
    auto task = std::make_shared<std::packaged_task<T()>>(std::move(step));
    std::future<T> done = task->get_future();
    std::thread([task] { (*task)(); }).detach();
    if (timeout.count() > 0 && done.wait_for(timeout) != std::future_status::ready) {
        stuck->store(true);
        throw_error(DT_ERR_TIMEOUT, what, " did not complete within ", timeout.count(),
                    " ms (DISTTRAIN_TIMEOUT)", hint);
    }
    return done.get();
}

std::string store_key(int round) { return cat("disttrain-store-", round); }
std::string token_key(int round) { return cat("disttrain-token-", round); }

} // namespace

bool ranks_from_slurm(const RankInfo &ranks)
{
    if (ranks.source != "Slurm" && ranks.source != "PMI")
        return false;
    // PMI variables outside a job step come from another launcher run by the batch script
    // itself (mpiexec), whose tasks all inherit the script's SLURM_PROCID=0: only rank 0
    // would match below, so none may.
    if (ranks.source == "PMI" && !env::get("SLURM_STEP_ID"))
        return false;
    auto procid = env::get("SLURM_PROCID");
    auto ntasks = env::get("SLURM_NTASKS");
    return procid && ntasks && *procid == std::to_string(ranks.rank) &&
           *ntasks == std::to_string(ranks.size);
}

Pmi2Session::Pmi2Session(std::shared_ptr<Pmi2Library> library, int rank, int size,
                         Millis timeout)
    : library_(std::move(library)), rank_(rank), size_(size)
{
    struct Init {
        int rc = -1, spawned = 0, size = -1, rank = -1, appnum = -1;
    };
    auto lib = library_;
    Init got = within<Init>(timeout, stuck_, "PMI2_Init", kServerHint, [lib] {
        Init r;
        r.rc = lib->init(&r.spawned, &r.size, &r.rank, &r.appnum);
        return r;
    });
    if (got.rc != kPmi2Success)
        throw_error(DT_ERR_CONNECT, "PMI2_Init (", lib->path(), ") failed with code ", got.rc,
                    ": srun's PMI2 server did not take this task", kWhatToDo);
    if (got.rank != rank || got.size != size)
        throw_error(DT_ERR_INVALID_CONFIG, "Slurm's PMI2 (", lib->path(), ") says this is rank ",
                    got.rank, " of ", got.size, " but SLURM_PROCID and SLURM_NTASKS say rank ",
                    rank, " of ", size, "; PMI2 serves another job step than this task's",
                    kWhatToDo);

    struct Id {
        int rc = -1;
        std::vector<char> text = std::vector<char>(256, '\0');
    };
    Id id = within<Id>(timeout, stuck_, "PMI2_Job_GetId", kServerHint, [lib] {
        Id r;
        r.rc = lib->job_get_id(r.text.data(), static_cast<int>(r.text.size()) - 1);
        return r;
    });
    if (id.rc != kPmi2Success)
        throw_error(DT_ERR_CONNECT, "PMI2_Job_GetId (", lib->path(), ") failed with code ",
                    id.rc, kWhatToDo);
    job_id_ = id.text.data();
}

SlurmRendezvous Pmi2Session::rendezvous(const std::string &bind_addr, Millis timeout)
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (stuck_->load())
        throw_error(DT_ERR_INVALID_STATE, "an earlier call to Slurm's PMI2 timed out and "
                    "never returned, so PMI2 cannot be used again in this process; restart "
                    "the job");
    const int round = next_round_++;
    SlurmRendezvous out;
    if (rank_ == 0) {
        out.token = Auth::random_token();
        out.server = std::make_unique<StoreServer>(bind_addr, Auth(out.token));
        out.store_addr = out.server->address();
    }

    struct Result {
        std::string failed; // the call that failed and its code; empty: all went well
        std::string store_addr, token;
    };
    auto lib = library_;
    const bool publisher = rank_ == 0;
    const std::string job_id = job_id_;
    const std::string addr = out.store_addr, token = out.token;
    Result r = within<Result>(timeout, stuck_,
                              cat("the PMI2 exchange of the store address (key ",
                                  store_key(round), ")"), kFenceHint, [=] {
        Result res;
        auto call = [&](const char *name, const std::string &key, int rc) {
            if (rc != kPmi2Success && res.failed.empty())
                res.failed = cat(name, "(", key, ") failed with code ", rc);
            return rc == kPmi2Success;
        };
        if (publisher && !(call("PMI2_KVS_Put", store_key(round),
                                lib->kvs_put(store_key(round).c_str(), addr.c_str())) &&
                           call("PMI2_KVS_Put", token_key(round),
                                lib->kvs_put(token_key(round).c_str(), token.c_str()))))
            return res;
        if (!call("PMI2_KVS_Fence", "", lib->kvs_fence()) || publisher)
            return res;
        std::vector<char> value(kPmi2MaxValueLength + 1, '\0');
        for (auto [key, target] : {std::pair{store_key(round), &res.store_addr},
                                   std::pair{token_key(round), &res.token}}) {
            int len = 0;
            std::fill(value.begin(), value.end(), '\0');
            if (!call("PMI2_KVS_Get", key,
                      lib->kvs_get(job_id.c_str(), 0, key.c_str(), value.data(),
                                   kPmi2MaxValueLength, &len)))
                return res;
            *target = value.data();
        }
        return res;
    });
    if (!r.failed.empty())
        throw_error(DT_ERR_STORE, "Slurm's PMI2 (", library_->path(), "): ", r.failed,
                    "; rank 0 publishes the store address there and every rank of the job "
                    "step must reach the same point");
    if (!publisher) {
        if (r.store_addr.empty() || r.token.empty())
            throw_error(DT_ERR_STORE, "Slurm's PMI2 (", library_->path(), ") holds no ",
                        r.store_addr.empty() ? "store address" : "job token", " under ",
                        r.store_addr.empty() ? store_key(round) : token_key(round),
                        " after the fence; rank 0 did not publish it");
        out.store_addr = r.store_addr;
        out.token = r.token;
    }
    return out;
}

SlurmRendezvous rendezvous_through_slurm_pmi2(const RankInfo &ranks, Millis timeout)
{
    // PMI2 allows one initialisation per process: the process keeps its session, used by
    // every context it creates.
    static std::mutex mutex;
    static std::unique_ptr<Pmi2Session> session;
    static bool init_stuck = false; // a PMI2_Init that timed out may still be running
    std::lock_guard<std::mutex> lock(mutex);
    if (init_stuck)
        throw_error(DT_ERR_INVALID_STATE, "an earlier PMI2_Init timed out and never "
                    "returned, so PMI2 cannot be used again in this process; restart the job");
    if (!session) {
        std::string why = cat("this is rank ", ranks.rank, " of ", ranks.size,
                              " started by Slurm (", ranks.source, ") with neither "
                              "DISTTRAIN_STORE_ADDR nor DISTTRAIN_JOB_TOKEN set, so the ranks "
                              "meet through Slurm's PMI2, but ");
        if (!env::get("SLURM_STEP_ID"))
            throw_error(DT_ERR_INVALID_CONFIG, why, "this process is not a task of an srun "
                        "job step (SLURM_STEP_ID is not set: it runs in the batch script "
                        "itself)", kWhatToDo);
        if (!env::get("PMI_FD"))
            throw_error(DT_ERR_INVALID_CONFIG, why, "srun gave this task no PMI2 server "
                        "(PMI_FD is not set: srun ran without --mpi=pmi2 and slurm.conf's "
                        "MpiDefault is not pmi2)", kWhatToDo);
        std::shared_ptr<Pmi2Library> library;
        try {
            library = std::make_shared<Pmi2Library>(Pmi2Library::default_path());
        } catch (const Error &e) {
            throw Error(e.status(), cat(why, e.what(), kWhatToDo));
        }
        try {
            session = std::make_unique<Pmi2Session>(library, ranks.rank, ranks.size, timeout);
        } catch (const Error &e) {
            init_stuck = e.status() == DT_ERR_TIMEOUT;
            throw;
        }
    }
    const bool one_node = env::get("SLURM_STEP_NUM_NODES") == std::optional<std::string>("1");
    return session->rendezvous(one_node ? "127.0.0.1:0" : "0.0.0.0:0", timeout);
}

} // namespace dt::bootstrap

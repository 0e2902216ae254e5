// SPDX-License-Identifier: Apache-2.0
#include "mpi_runtime.h"

#include "mpi_error.h"

#include <mpi.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

namespace dt::mpi {
namespace {

// Process-wide because MPI is: the instances of every context share one MPI.
struct Runtime {
    std::mutex mutex;
    bool we_initialised = false;
    bool pinned = false;
    // Atomic, not under the mutex: check() marks a failure of MPI_Init_thread while
    // acquire_mpi holds the mutex.
    std::atomic<bool> failed{false};
    std::atomic<bool> abandoned{false}; // requests were left to MPI
    MPI_Comm exit_comm = MPI_COMM_NULL; // the ranks meet there at exit
    int provided = MPI_THREAD_SINGLE;
    int instances = 0;
};

Runtime &runtime() {
    static Runtime r;
    return r;
}

// How long a process whose MPI failed waits at exit for the other ranks.
constexpr auto kFailedExitLimit = std::chrono::seconds(2);

// Whether every rank has come to exit too: a barrier on a communicator kept for it,
// waited for up to `limit` (none: without limit). MPI has no wait with a time limit.
bool every_rank_exiting(MPI_Comm comm, std::optional<std::chrono::milliseconds> limit) {
    MPI_Request req = MPI_REQUEST_NULL;
    if (comm == MPI_COMM_NULL || MPI_Ibarrier(comm, &req) != MPI_SUCCESS) return false;
    const auto deadline = std::chrono::steady_clock::now() + limit.value_or(kFailedExitLimit);
    for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
        if (done) return true;
        if (limit && std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// Open MPI 4.1's MPI_Finalize waits in a PMIx fence for every rank of the job and has no
// form with a time limit. After a failure some rank may never get there (stopped, hung
// in user code), and every survivor would hang at exit with its error already reported.
// Skipping MPI_Finalize at once is no better: mpirun ends the job as soon as one rank
// exits without it, killing survivors a few milliseconds behind before they report their
// own error. Leaving the fence from a watchdog (_exit) was tried: now and then mpirun
// itself then hung in its PMIx server's shutdown. So the ranks first meet in a barrier of
// our own, which a failed process waits for up to kFailedExitLimit: when every rank comes
// (all failed together, say), MPI_Finalize ends MPI cleanly; else the process exits
// without it, its exit code the program's, and mpirun ends the job, killing the ranks
// still running, a stopped one included (it sends SIGCONT, SIGTERM, then SIGKILL). After
// requests were left to MPI (a collective cannot be cancelled) the process calls MPI no
// more, neither the barrier nor MPI_Finalize: any progress of MPI would let the peers'
// side of that collective write into buffers the program has freed since it failed
// (survivors of a stopped rank crashed so at exit). It only waits out the same limit
// before it exits, so that survivors a little behind it still report their own error
// before mpirun, seeing this rank gone, stops the job. A clean process waits without
// limit: a peer may legitimately come much later (still writing a checkpoint, say).
// A program that exits with a context still open (exit() without dt_context_destroy)
// is treated as one that left requests to MPI: that context's engine thread may be
// inside MPI at this moment, and MPI_Finalize beside it crashes the process.
void finalize_at_exit() {
    Runtime &r = runtime();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!r.we_initialised || finalized) return;
    int open_instances = 0;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        open_instances = r.instances;
    }
    if (r.abandoned.load() || open_instances > 0) {
        std::this_thread::sleep_for(kFailedExitLimit);
        return;
    }
    std::optional<std::chrono::milliseconds> limit;
    if (r.failed.load()) limit = kFailedExitLimit;
    if (every_rank_exiting(r.exit_comm, limit)) MPI_Finalize();
}

// Open MPI raises on MPI_COMM_WORLD the errors of calls that name no communicator
// (MPI_Cancel, MPI_Request_free) and those a non-blocking collective meets inside its
// schedule (a truncated receive when ranks disagree on a count is reported by
// MPI_Testsome "on communicator MPI_COMM_WORLD"); MPI-4 names MPI_COMM_SELF for some.
// Both default to MPI_ERRORS_ARE_FATAL, which aborts the whole job. Set right after
// MPI_Init_thread, before any other call of ours can raise; the plugin's own
// communicators are duplicates of MPI_COMM_WORLD and inherit it (mpi_tags.cc sets it
// again).
void return_errors() {
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
    check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler(MPI_COMM_SELF)");
}

// A program that initialised MPI itself chose how errors raised on MPI_COMM_WORLD are
// handled, for its own calls too; changing that behind its back would let its unchecked
// calls go on after an error. Say what the default means for us instead.
void warn_if_fatal(const Host &host) {
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler) != MPI_SUCCESS) return;
    if (handler == MPI_ERRORS_ARE_FATAL) {
        host.log(DT_LOG_INFO,
                 "MPI_COMM_WORLD keeps the program's MPI_ERRORS_ARE_FATAL: an error Open MPI "
                 "raises there (one of a native collective, say) aborts the job instead of "
                 "failing the operation; set MPI_ERRORS_RETURN on MPI_COMM_WORLD after "
                 "MPI_Init to get it as an error");
    }
    if (handler != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&handler);
}

// The core may dlclose the plugin when a context ends, but MPI cannot be initialised a
// second time and its own components need libmpi's symbols: keep this plugin (and with
// it libmpi) loaded for the life of the process, and make libmpi's symbols global as
// mpi4py does, so Open MPI's dlopen'ed components resolve against it.
void pin_libraries(const Host &host) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&finalize_at_exit), &info) != 0 &&
        info.dli_fname != nullptr) {
        if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) == nullptr) {
            host.log(DT_LOG_WARN, std::string("could not pin ") + info.dli_fname +
                                      " in memory: " + dlerror());
        }
    }
    for (const char *lib : {"libmpi.so.40", "libmpi.so"}) {
        if (dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD | RTLD_NODELETE) != nullptr) {
            return;
        }
    }
}

const char *thread_level_name(int level) {
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown thread level";
    }
}

} // namespace

const char *const kNotLaunchedReason =
    "DISTTRAIN_TRANSPORT=mpi but this process was not started by mpirun/mpiexec; start the "
    "job with mpirun, or choose tcp";

std::string launcher_variable() {
    // Open MPI's mpirun, then any PMIx or PMI launcher (srun --mpi=pmix, MPICH's mpiexec).
    for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
        const char *v = std::getenv(name);
        if (v != nullptr && *v != '\0') return name;
    }
    return {};
}

bool mpi_usable() {
    int initialised = 0;
    MPI_Initialized(&initialised); // one of the calls MPI allows before MPI_Init
    return initialised != 0 || !launcher_variable().empty();
}

void acquire_mpi(const Host &host) {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lock(r.mutex);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
        throw MpiError(DTP_ERR_INVALID_CONFIG,
                       "mpi: MPI was already finalised in this process and cannot be "
                       "initialised again; create every context before MPI_Finalize");
    }
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
        if (launcher_variable().empty()) throw MpiError(DTP_ERR_INVALID_CONFIG, kNotLaunchedReason);
        pin_libraries(host);
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &r.provided),
              "MPI_Init_thread");
        r.we_initialised = true;
        std::atexit(finalize_at_exit);
        return_errors();
        // Collective, like MPI_Init_thread: every rank gets here in the same order.
        check(MPI_Comm_dup(MPI_COMM_WORLD, &r.exit_comm), "MPI_Comm_dup");
        host.log(DT_LOG_DEBUG, std::string("initialised MPI with ") +
                                   thread_level_name(r.provided) + " (launcher variable " +
                                   launcher_variable() + ")");
    } else if (!r.we_initialised && r.instances == 0) {
        MPI_Query_thread(&r.provided);
        warn_if_fatal(host);
        host.log(DT_LOG_DEBUG, std::string("joining the program's MPI (") +
                                   thread_level_name(r.provided) +
                                   "); the program finalises it");
    }
    if (r.provided < MPI_THREAD_SERIALIZED) {
        throw MpiError(DTP_ERR_INVALID_CONFIG,
                       std::string("mpi: MPI runs at ") + thread_level_name(r.provided) +
                           ", but libdisttrain calls MPI from its engine thread, which needs "
                           "at least MPI_THREAD_SERIALIZED; initialise MPI with "
                           "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or leave it to "
                           "libdisttrain");
    }
    if (r.instances > 0 && r.provided < MPI_THREAD_MULTIPLE) {
        throw MpiError(DTP_ERR_INVALID_CONFIG,
                       "mpi: a second context using the mpi transport at the same time needs "
                       "MPI_THREAD_MULTIPLE, but MPI runs at " +
                           std::string(thread_level_name(r.provided)) +
                           "; destroy the other context first or use tcp for this one");
    }
    ++r.instances;
}

void release_mpi() {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.instances > 0) --r.instances;
}

void mark_failed() { runtime().failed.store(true); }

void mark_abandoned() {
    runtime().abandoned.store(true);
    mark_failed();
}

} // namespace dt::mpi

#include "mpi_runtime.h"

#include "mpi_error.h"

#include <mpi.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace dt::mpi {
namespace {

// Process-wide because MPI is: the instances of every context share one MPI.
struct Runtime {
    std::mutex mutex;
    bool we_initialised = false;
    bool pinned = false;
    bool aborted = false;
    int provided = MPI_THREAD_SINGLE;
    int instances = 0;
};

Runtime &runtime() {
    static Runtime r;
    return r;
}

void finalize_at_exit() {
    Runtime &r = runtime();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (r.we_initialised && !r.aborted && !finalized) MPI_Finalize();
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
        host.log(DT_LOG_DEBUG, std::string("initialised MPI with ") +
                                   thread_level_name(r.provided) + " (launcher variable " +
                                   launcher_variable() + ")");
    } else if (!r.we_initialised && r.instances == 0) {
        MPI_Query_thread(&r.provided);
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

void mark_aborted() {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.aborted = true;
}

} // namespace dt::mpi

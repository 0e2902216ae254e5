// MPI itself, which is one per process whatever the number of contexts: whether this
// process was started by an MPI launcher, initialising MPI at the thread level the engine
// needs (or joining the host program's MPI), and finalising it at exit when the plugin
// was the one that initialised it.
#pragma once

#include "mpi_host.h"

#include <string>

namespace dt::mpi {

// Which launcher variables show this process was started by mpirun/mpiexec (or srun with
// PMIx), e.g. "OMPI_COMM_WORLD_SIZE"; empty when none is set.
std::string launcher_variable();

// True when MPI can be used from this process: the host program initialised MPI, or a
// launcher started it. Never blocks (negotiation calls it).
bool mpi_usable();

// The reason given when mpi_usable() is false.
extern const char *const kNotLaunchedReason;

// Initialises MPI (MPI_Init_thread asking for MPI_THREAD_MULTIPLE) unless it is already
// initialised, and registers one instance. Throws MpiError when MPI was finalised, when
// the host's thread level is below MPI_THREAD_SERIALIZED (the engine calls MPI from its
// own thread), or when a second concurrent instance would need MPI_THREAD_MULTIPLE.
void acquire_mpi(const Host &host);

// Unregisters one instance. MPI stays initialised until process exit, so later contexts
// in the same process can use it again (MPI cannot be initialised twice).
void release_mpi();

// Remembers that an instance was aborted with operations in flight: MPI_Finalize (a
// collective in Open MPI) is then skipped at exit, since a peer in trouble could make it
// hang; the launcher reports the failed job instead.
void mark_aborted();

} // namespace dt::mpi

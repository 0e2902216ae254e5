/* SPDX-License-Identifier: Apache-2.0 */
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

// Remembers that MPI failed in this process: an MPI call or request returned an error, or
// the core aborted an instance (a peer timed out, a collective failed, the program gave
// up). At exit the process then waits only so long for the other ranks, and skips
// MPI_Finalize when they do not come (mpi_runtime.cc says why). Never blocks, and safe
// from any thread and from inside acquire_mpi.
void mark_failed();

// Remembers that requests were left to MPI that it could not cancel (a collective, a
// matched send): a failure, and MPI_Finalize is skipped at exit whatever happens.
void mark_abandoned();

} // namespace dt::mpi

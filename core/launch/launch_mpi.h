// --launcher mpi: mpirun starts the ranks (its placement, its remote start, the cluster's
// trusted path), while disttrainrun still serves the rendezvous store, passes its address
// and the job token with `mpirun -x`, and supervises the job (timeout, signals, the
// summary; mpirun is its one "rank"). Ranks find rank and size from Open MPI's OMPI_COMM_WORLD_* variables.
#pragma once

#include "launch/launch_options.h"

#include <string>
#include <vector>

namespace dt::launch {

// The mpirun command line for opt (argv[0] is "mpirun"): -np, -H when given, -x for the
// store variables and every other DISTTRAIN_* setting in env_names, --tag-output when
// output is tagged, then the rank command.
std::vector<std::string> mpirun_argv(const Options &opt,
                                     const std::vector<std::string> &env_names);

// Runs the whole job through mpirun; returns disttrainrun's exit code.
int run_with_mpirun(const Options &opt);

} // namespace dt::launch

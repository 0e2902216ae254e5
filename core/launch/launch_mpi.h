/* SPDX-License-Identifier: Apache-2.0 */
// --launcher mpi: mpirun starts the ranks (its placement, its remote start, the cluster's
// trusted path), while disttrainrun still serves the rendezvous store, passes its address
// and the job token with `mpirun -x`, and supervises the job (timeout, signals, the
// summary; mpirun is its one "rank"). Ranks find rank and size from Open MPI's OMPI_COMM_WORLD_* variables.
#pragma once

#include "launch/launch_options.h"

#include <string>
#include <vector>

namespace dt::launch {

// The mpirun command line for opt (argv[0] is "mpirun"): -np, -H hosts when not empty
// (the -H or --hostfile hosts in -H form), the ssh port and key as plm_rsh_args, -x for
// the store variables and every name in env_names (the settings forwarded to remote
// ranks, launch_env.h), --tag-output when output is tagged, then the rank command.
std::vector<std::string> mpirun_argv(const Options &opt, const std::string &hosts,
                                     const std::vector<std::string> &env_names);

// Runs the whole job through mpirun; returns disttrainrun's exit code.
int run_with_mpirun(const Options &opt);

} // namespace dt::launch

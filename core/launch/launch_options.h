/* SPDX-License-Identifier: Apache-2.0 */
// The disttrainrun command line. Parsed by hand rather than with CLI11 (which the other
// programs use) because mpirun's syntax does not fit it: CLI11 (2.1) refuses
// multi-letter single-dash names (-np, -hostfile), and its prefix_command mode, the only
// one that takes the rank command verbatim without `--` (`disttrainrun -np 2 ./train -x`),
// stops at the first unknown option instead of rejecting it, so a typo such as
// --hostfil would be run as the rank command.
#pragma once

#include "launch/launch_binding.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dt::launch {

enum class LauncherKind {
    automatic, // local slots start locally, other hosts through ssh
    local,     // every rank starts here; remote hosts in -H are an error
    ssh,       // every rank starts through ssh, localhost included
    mpi,       // mpirun starts every rank (launch_mpi.h)
};

// One -x: NAME alone forwards disttrainrun's own value (nothing when it is unset);
// NAME=VALUE sets VALUE.
struct ExportedVar {
    std::string name;
    std::optional<std::string> value;
};

struct Options {
    int np = 0;
    std::string hosts;            // -H value, empty when not given
    std::string hostfile;         // --hostfile path, empty when not given (excludes -H)
    std::vector<ExportedVar> exports; // -x, in the order given
    int ssh_port = 0;             // --ssh-port, 0: ssh's default
    std::string ssh_identity;     // --ssh-identity, empty: ssh's default keys
    bool show_version = false;    // --version: print it and exit (nothing else checked)
    LauncherKind launcher = LauncherKind::automatic;
    double timeout_s = 0;         // 0: no job time limit
    double grace_s = 5;           // SIGTERM to SIGKILL delay when stopping ranks
    bool tag_output = true;
    BindTo bind_to = BindTo::automatic; // local ranks only (launch_binding.h)
    bool elastic = false;         // --elastic: a rank that dies does not stop the others
    int min_np = 1;               // --min-np: the fewest ranks an elastic job runs with
    int max_restarts = 0;         // --max-restarts: replacements an elastic job may start
    int max_np = 0;               // --max-np: the most ranks running at once; 0: -np
    std::string discovery_script; // --host-discovery-script: prints host:slots lines
    std::vector<std::string> command;
};

// Thrown for a bad command line; main prints the message with the usage hint and exits 2.
struct UsageError {
    std::string message;
};

// Parses argv (without argv[0]). Returns nullopt when --help was asked for (usage() is
// then printed by the caller), options with show_version set for --version. Throws
// UsageError naming the bad argument. Does not read the hostfile (parse_hostfile does).
std::optional<Options> parse_options(const std::vector<std::string> &args);

// The variables disttrainrun sets per rank (DISTTRAIN_RANK, ..._JOB_TOKEN, the elastic
// settings), which neither -x nor the inherited environment may set.
const std::vector<std::string> &rank_variable_names();
bool is_rank_variable(const std::string &name);

const char *usage() noexcept;

// "disttrainrun (libdisttrain) 1.1.0, API 1.1"
std::string version_text();

} // namespace dt::launch

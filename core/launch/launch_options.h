// The disttrainrun command line. Parsed by hand rather than with CLI11 because the rank
// command that follows the options is taken verbatim (its own -x flags included), which
// CLI11 only does with `--`; mpirun users expect `disttrainrun -np 2 ./train --lr 0.1`.
#pragma once

#include "launch/launch_binding.h"

#include <optional>
#include <string>
#include <vector>

namespace dt::launch {

enum class LauncherKind {
    automatic, // local slots start locally, other hosts through ssh
    local,     // every rank starts here; remote hosts in -H are an error
    ssh,       // every rank starts through ssh, localhost included
    mpi,       // mpirun starts every rank (launch_mpi.h)
};

struct Options {
    int np = 0;
    std::string hosts;            // -H value, empty when not given
    LauncherKind launcher = LauncherKind::automatic;
    double timeout_s = 0;         // 0: no job time limit
    double grace_s = 5;           // SIGTERM to SIGKILL delay when stopping ranks
    bool tag_output = true;
    BindTo bind_to = BindTo::automatic; // local ranks only (launch_binding.h)
    std::vector<std::string> command;
};

// Thrown for a bad command line; main prints the message with the usage hint and exits 2.
struct UsageError {
    std::string message;
};

// Parses argv (without argv[0]). Returns nullopt when --help was asked for (usage() is
// then printed by the caller). Throws UsageError naming the bad argument.
std::optional<Options> parse_options(const std::vector<std::string> &args);

const char *usage() noexcept;

} // namespace dt::launch

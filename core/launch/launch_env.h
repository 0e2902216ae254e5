/* SPDX-License-Identifier: Apache-2.0 */
// What the ranks' environment holds besides their rank variables. Local ranks inherit
// disttrainrun's environment; ranks started through ssh (or by mpirun on other hosts) get
// only the settings below, as mpirun -x forwards only what it is told:
//   DISTTRAIN_*       the library's own settings (log level, transports, timeouts)
//   OMP_NUM_THREADS, NCCL_*, UCX_*
//                     tuning of the libraries the ranks use, which users set on the
//                     launch line (NCCL_DEBUG=INFO disttrainrun ...) and expect on every
//                     rank, and which do not name paths of this host
//   -x VAR[=VALUE]    anything else, on request
// PYTHONPATH and LD_LIBRARY_PATH are not forwarded by default (nor by mpirun): they name
// folders of this host and would replace what the remote login sets up (a CUDA or
// conda library path), a failure far from its cause; -x PYTHONPATH says it when the hosts
// share the paths. The whole environment is not forwarded either: HOME, PATH, DISPLAY,
// SSH_AUTH_SOCK and the like belong to each host.
#pragma once

#include "launch/launch_options.h"

#include <string>
#include <utility>
#include <vector>

namespace dt::launch {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// True for the variables forwarded to remote ranks without -x (see above).
bool forwarded_by_default(const std::string &name);

// A warning for each bare -x NAME unset here, which no rank gets: the job would start
// without it, often from a misspelt name (-x PYTONPATH) that is then hard to trace.
std::vector<std::string> unset_export_warnings(const std::vector<ExportedVar> &exports);

// The -x variables with their values: VALUE when given, else ours from environment
// ("NAME=VALUE" entries); a bare NAME unset here is left out. A later -x of the same name
// wins.
EnvList exported_values(const std::vector<ExportedVar> &exports,
                        const std::vector<std::string> &environment);

// What remote ranks get besides their rank variables: the entries of environment
// forwarded by default (rank variables excluded), then exported, which overrides them.
EnvList remote_settings(const std::vector<std::string> &environment, const EnvList &exported);

// Sets name=value in env ("NAME=VALUE" entries), replacing an entry of that name.
void set_variable(std::vector<std::string> &env, const std::string &name,
                  const std::string &value);

} // namespace dt::launch

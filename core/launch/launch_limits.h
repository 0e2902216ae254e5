/* SPDX-License-Identifier: Apache-2.0 */
// What to tell a user whose job the launcher could not start because it ran out of open
// files or processes: how many it needs and which limit to raise.
#pragma once

#include "launch/launch_process.h"

#include <cstddef>
#include <string>

namespace dt::launch {

// "; disttrainrun needs about N open files for R rank(s), ...: raise its limit ... with
// ulimit -n N ...", or the like for ENFILE and a fork's EAGAIN; "" for any other failure
// (an exec's). fds_at_start: the descriptors open when the job began; ranks: how many it
// starts, with_stdin of them with a stdin pipe (ssh).
std::string limit_advice(const SpawnError &e, long fds_at_start, size_t ranks,
                         size_t with_stdin);

} // namespace dt::launch

/* SPDX-License-Identifier: Apache-2.0 */
// The routing policy: every DISTTRAIN_* setting that decides how a collective runs,
// parsed once at dt_context_create (runtime/config.cc). A malformed value fails create
// with DT_ERR_INVALID_CONFIG naming the variable, the value and what is allowed, so a
// collective never reads the environment and never fails on a setting.
#pragma once

#include "algorithms/allreduce_select.h"
#include "shm/settings.h"

#include <functional>
#include <optional>
#include <string>

namespace dt::routing {

struct Policy {
    // DISTTRAIN_ALGORITHM: automatic (by size), one forced point-to-point allreduce
    // algorithm (which also keeps allreduce off shared memory and off the transport's
    // native allreduce), or shm (ahead of the native allreduce where shared memory serves).
    algo::AllreduceChoice algorithm = algo::AllreduceChoice::automatic;
    // DISTTRAIN_SHM and DISTTRAIN_SHM_*.
    shm::Settings shm;
};

// A variable's value, or nullopt when unset or empty (env::get in production; a map in
// tests).
using Lookup = std::function<std::optional<std::string>(const char *name)>;

// Throws DT_ERR_INVALID_CONFIG for the first malformed variable.
Policy parse_policy(const Lookup &lookup);

// parse_policy over this process's environment.
Policy read_policy();

// The name DISTTRAIN_ALGORITHM gives a choice ("auto", "ring", ...), for logs.
const char *algorithm_name(algo::AllreduceChoice choice) noexcept;

} // namespace dt::routing

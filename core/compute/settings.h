/* SPDX-License-Identifier: Apache-2.0 */
// What a compute context is asked for: plugin names to try, device, threads, compute
// dtype and cache size, from dt_compute_params_t first and DISTTRAIN_* variables second.
#pragma once

#include <disttrain/compute.h>

#include <string>
#include <vector>

namespace dt::compute {

struct Settings {
    std::vector<std::string> plugins; // in the order to try; from "auto" or a list
    bool automatic = false;           // "auto": a plugin that fails is skipped quietly
    int device = -1; // >= 0: a GPU ordinal; < 0: -1 - local rank (plugin's choice)
    int threads = 1;
    dt_dtype_t compute_dtype = DT_FLOAT32;
    int cache_capacity = 1024;
};

// Reads params (may be NULL) and the environment. Throws DT_ERR_INVALID_CONFIG naming
// the param or variable and what is allowed.
Settings read_settings(const dt_compute_params_t *params);

// The CPUs in this process's affinity mask (at least 1).
int affinity_cpus();

} // namespace dt::compute

// SPDX-License-Identifier: Apache-2.0
#include "compute/settings.h"

#include "plugin/loader.h"
#include "runtime/env.h"
#include "runtime/error.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace dt::compute {

namespace {

// "auto" tries cudnn first (it declines without a GPU), then onednn, then any other
// compute plugin found, so a GPU is used whenever one is there.
std::vector<std::string> auto_order()
{
    std::vector<std::string> found = plugin::available("compute");
    std::vector<std::string> order;
    for (const char *preferred : {"cudnn", "onednn"})
        if (std::find(found.begin(), found.end(), preferred) != found.end())
            order.emplace_back(preferred);
    for (const auto &name : found)
        if (std::find(order.begin(), order.end(), name) == order.end())
            order.push_back(name);
    if (order.empty())
        order.emplace_back("onednn"); // so the error lists the folders searched
    return order;
}

dt_dtype_t parse_dtype(const std::string &what, const std::string &value)
{
    if (value == "f32" || value == "float32" || value == "fp32")
        return DT_FLOAT32;
    if (value == "bf16" || value == "bfloat16")
        return DT_BFLOAT16;
    throw_error(DT_ERR_INVALID_CONFIG, what, "='", value,
                "' is not a compute dtype; use f32 or bf16");
}

} // namespace

int affinity_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return std::max(1, CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
}

Settings read_settings(const dt_compute_params_t *params)
{
    const uint64_t mask = params != nullptr ? params->field_mask : 0;
    Settings s;

    std::string what = "DISTTRAIN_COMPUTE";
    std::string plugin = env::get("DISTTRAIN_COMPUTE").value_or("auto");
    if (mask & DT_COMPUTE_PARAM_FIELD_PLUGIN) {
        what = "dt_compute_params_t.plugin";
        plugin = params->plugin != nullptr ? params->plugin : "auto";
    }
    std::vector<std::string> names = env::split_list(plugin);
    if (names.empty())
        names.emplace_back("auto");
    for (const auto &name : names) {
        if (name.find_first_of("/.") != std::string::npos || name.empty())
            throw_error(DT_ERR_INVALID_CONFIG, what, "='", plugin, "': '", name,
                        "' is not a plugin name; use onednn, cudnn or auto");
        if (name == "auto") {
            s.automatic = true;
            for (auto &n : auto_order())
                if (std::find(s.plugins.begin(), s.plugins.end(), n) == s.plugins.end())
                    s.plugins.push_back(n);
        } else if (std::find(s.plugins.begin(), s.plugins.end(), name) == s.plugins.end()) {
            s.plugins.push_back(name);
        }
    }

    if (mask & DT_COMPUTE_PARAM_FIELD_DEVICE) {
        if (params->device < 0)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_compute_params_t.device=", params->device,
                        " must be >= 0 (a GPU ordinal)");
        s.device = params->device;
    } else if (auto device = env::get("DISTTRAIN_DEVICE")) {
        // The same variable the CUDA memory provider and the nccl transport read, so all
        // use one GPU; read as strictly as they read it (plugins/common/device_ordinal.h).
        if (device->find_first_not_of("0123456789") != std::string::npos)
            throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_DEVICE='", *device, "' is not a "
                        "GPU ordinal: write the GPU's number in digits only (0, 1, ...), or "
                        "unset it for the local rank modulo the GPU count");
        s.device = static_cast<int>(env::parse_int("DISTTRAIN_DEVICE", *device, 0, 1 << 16));
    } else {
        // The plugin picks local_rank modulo its device count (dt_compute_init_args_t).
        s.device = -1 - static_cast<int>(env::get_int("DISTTRAIN_LOCAL_RANK", 0, 0, 1 << 20));
    }

    if (mask & DT_COMPUTE_PARAM_FIELD_THREADS) {
        if (params->threads < 1 || params->threads > 4096)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_compute_params_t.threads=",
                        params->threads, " must be in [1, 4096]");
        s.threads = params->threads;
    } else {
        s.threads = static_cast<int>(
            env::get_int("DISTTRAIN_THREADS", affinity_cpus(), 1, 4096));
    }

    if (mask & DT_COMPUTE_PARAM_FIELD_COMPUTE_DTYPE) {
        if (params->compute_dtype != DT_FLOAT32 && params->compute_dtype != DT_BFLOAT16)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_compute_params_t.compute_dtype=",
                        static_cast<int>(params->compute_dtype),
                        " must be DT_FLOAT32 or DT_BFLOAT16");
        s.compute_dtype = params->compute_dtype;
    } else if (auto value = env::get("DISTTRAIN_COMPUTE_DTYPE")) {
        s.compute_dtype = parse_dtype("DISTTRAIN_COMPUTE_DTYPE", *value);
    }

    if (mask & DT_COMPUTE_PARAM_FIELD_CACHE_CAPACITY) {
        if (params->cache_capacity < 1)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_compute_params_t.cache_capacity=",
                        params->cache_capacity, " must be >= 1");
        s.cache_capacity = params->cache_capacity;
    }
    return s;
}

} // namespace dt::compute

// SPDX-License-Identifier: Apache-2.0
#include "nn/compute.h"

#include "common/error.h"

#include <disttrain/disttrain.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dt::models {

void check(dt_status_t status, const char *what)
{
    if (status == DT_OK)
        return;
    // disttrain::error keeps the status, so the elastic trainer can tell a lost peer
    // from other failures; it is a std::runtime_error like every other failure here.
    throw disttrain::error(status, cat(what, ": ", dt_status_string(status), ": ",
                                       dt_last_error()));
}

Compute::Compute(const ComputeOptions &options)
{
    dt_compute_params_t params = {};
    if (options.threads > 0) {
        params.field_mask |= DT_COMPUTE_PARAM_FIELD_THREADS;
        params.threads = options.threads;
    }
    if (options.bf16) {
        params.field_mask |= DT_COMPUTE_PARAM_FIELD_COMPUTE_DTYPE;
        params.compute_dtype = DT_BFLOAT16;
    }
    if (!options.plugin.empty()) {
        params.field_mask |= DT_COMPUTE_PARAM_FIELD_PLUGIN;
        params.plugin = options.plugin.c_str();
    }
    dt_compute_h h = nullptr;
    check(dt_compute_create(&params, &h), "dt_compute_create");
    handle_.reset(h);
}

namespace {
dt_compute_attr_t query(dt_compute_h h)
{
    dt_compute_attr_t a = {};
    // Every field a caller below reads: a field whose bit is clear is left as it was
    // (zero, which for device_kind reads as CPU and made tensor_memory() say host).
    a.field_mask = DT_COMPUTE_ATTR_FIELD_PLUGIN | DT_COMPUTE_ATTR_FIELD_DEVICE_KIND |
                   DT_COMPUTE_ATTR_FIELD_DEVICE_NAME | DT_COMPUTE_ATTR_FIELD_THREADS |
                   DT_COMPUTE_ATTR_FIELD_COMPUTE_DTYPE | DT_COMPUTE_ATTR_FIELD_TF32_CONVOLUTIONS;
    check(dt_compute_query(h, &a), "dt_compute_query");
    return a;
}
} // namespace

std::string Compute::describe() const
{
    const auto a = query(get());
    return cat(a.plugin ? a.plugin : "?", " on ", a.device_name ? a.device_name : "?", ", ",
               a.threads, a.threads == 1 ? " thread, " : " threads, ",
               dt_dtype_name(a.compute_dtype), " compute");
}

int Compute::threads() const { return query(get()).threads; }

bool Compute::bf16_active() const { return query(get()).compute_dtype == DT_BFLOAT16; }

bool Compute::tf32_convolutions() const { return query(get()).tf32_convolutions != 0; }

dt_memory_type_t Compute::tensor_memory() const
{
    return query(get()).device_kind == DT_COMPUTE_DEVICE_GPU ? DT_MEMORY_DEVICE
                                                             : DT_MEMORY_HOST;
}

dt_dtype_t Compute::activation_dtype() const
{
    const auto a = query(get());
    if (a.compute_dtype != DT_BFLOAT16)
        return DT_FLOAT32;
    const char *env = std::getenv("DISTTRAIN_ACTIVATIONS");
    const std::string asked = env != nullptr ? env : "";
    if (asked == "bfloat16")
        return DT_BFLOAT16;
    if (asked == "float32")
        return DT_FLOAT32;
    if (!asked.empty() && asked != "auto")
        throw_input_error("DISTTRAIN_ACTIVATIONS=", asked,
                          " is unknown; use auto, bfloat16 or float32");
    return a.device_kind != DT_COMPUTE_DEVICE_GPU ? DT_BFLOAT16 : DT_FLOAT32;
}

void *Compute::stream() const
{
    dt_compute_attr_t a = {};
    a.field_mask = DT_COMPUTE_ATTR_FIELD_STREAM;
    check(dt_compute_query(get(), &a), "dt_compute_query");
    return a.stream;
}

const char *Compute::memory_provider() const
{
    dt_compute_attr_t a = {};
    a.field_mask = DT_COMPUTE_ATTR_FIELD_MEMORY_PROVIDER;
    check(dt_compute_query(get(), &a), "dt_compute_query");
    return a.memory_provider;
}

void Compute::synchronize() const
{
    check(dt_compute_synchronize(get()), "dt_compute_synchronize");
}

} // namespace dt::models

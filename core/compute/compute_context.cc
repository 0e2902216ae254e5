// SPDX-License-Identifier: Apache-2.0
// Opening a compute plugin: load and negotiate (core/plugin), copy its ops table, check
// the members the core cannot do without, init an instance on the device.
#include "compute/compute_context.h"

#include "compute/services.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace dt::compute {

namespace {

// The table copied min(struct_size, sizeof) so a shorter future-compatible table reads
// as NULL members, as CONVENTIONS.md asks of every struct crossing the ABI.
dt_compute_v1_t copy_ops(const plugin::LoadedPlugin &plugin)
{
    const auto *table = static_cast<const dt_compute_v1_t *>(plugin.ops());
    const std::string who = cat("compute plugin '", plugin.name(), "' (", plugin.path(), ")");
    if (table->struct_size < offsetof(dt_compute_v1_t, synchronize))
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered an ops table of ", table->struct_size,
                    " bytes, too short for compute version 1; the plugin is broken");
    dt_compute_v1_t ops{};
    std::memcpy(&ops, table, std::min<size_t>(table->struct_size, sizeof(ops)));
    if (ops.init == nullptr || ops.finalize == nullptr || ops.info == nullptr ||
        ops.alloc == nullptr || ops.free == nullptr || ops.memcpy == nullptr)
        throw_error(DT_ERR_PLUGIN_ABI, who, " lacks one of init, finalize, info, alloc, "
                    "free, memcpy; the plugin is broken");
    return ops;
}

const char *dtype_label(int32_t dtype)
{
    return dtype == DTP_BFLOAT16 ? "bf16" : dtype == DTP_FLOAT16 ? "f16" : "f32";
}

} // namespace

ComputeContext::ComputeContext(std::unique_ptr<plugin::LoadedPlugin> plugin,
                               const dt_compute_v1_t &ops)
    : plugin_(std::move(plugin)), ops_(ops)
{
}

void ComputeContext::require_layout(const char *function, int32_t layout) const
{
    if (layout == DTP_LAYOUT_NCHW || plugin_->ops_version() >= DT_COMPUTE_VERSION_2)
        return;
    throw_error(DT_ERR_UNSUPPORTED, function, ": compute plugin '", name(), "' (",
                plugin_->path(), ") speaks compute ops version ", plugin_->ops_version(),
                ", which has no channels-last layout: it would read the NHWC activations as "
                "NCHW. Rebuild it against this libdisttrain's disttrain/plugin/compute.h, or "
                "pass DT_LAYOUT_NCHW (the model programs: DISTTRAIN_LAYOUT=nchw)");
}

void ComputeContext::require_dtypes(const char *function, const dtp_tensor_t &activations,
                                    const dtp_tensor_t &weights) const
{
    if (activations.dtype == weights.dtype || plugin_->ops_version() >= DT_COMPUTE_VERSION_2)
        return;
    throw_error(DT_ERR_UNSUPPORTED, function, ": compute plugin '", name(), "' (",
                plugin_->path(), ") speaks compute ops version ", plugin_->ops_version(),
                ", which has no bfloat16 activations beside float32 weights: it would read "
                "the weights as bfloat16. Rebuild it against this libdisttrain's "
                "disttrain/plugin/compute.h, or keep the activations in the weights' dtype");
}

ComputeContext::~ComputeContext()
{
    if (instance_ != nullptr) {
        error_.clear();
        if (scratch_ != nullptr && ops_.free(instance_, scratch_) != DTP_OK)
            DT_LOG(warn, "compute", name(), " could not free its scratch buffer: ",
                   error_.empty() ? "(no reason given)" : error_.c_str());
        error_.clear();
        int32_t rc = ops_.finalize(instance_);
        if (rc != DTP_OK)
            DT_LOG(warn, "compute", name(), " finalize failed: ",
                   error_.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                  : error_.c_str());
    }
}

std::unique_ptr<ComputeContext> ComputeContext::open(const Settings &settings)
{
    std::string failures;
    for (const auto &name : settings.plugins) {
        try {
            auto loaded = plugin::load("compute", name, services());
            dt_compute_v1_t ops = copy_ops(*loaded);
            std::unique_ptr<ComputeContext> ctx(new ComputeContext(std::move(loaded), ops));

            dt_compute_init_args_t args{};
            args.struct_size = sizeof(args);
            args.abi_version = DT_COMPUTE_VERSION;
            args.device = settings.device;
            args.threads = settings.threads;
            args.compute_dtype = settings.compute_dtype;
            args.cache_capacity = settings.cache_capacity;
            args.host = ctx.get();
            args.services = services();
            ctx->error_.clear();
            void *instance = nullptr;
            int32_t rc = ops.init(&args, &instance);
            if (rc != DTP_OK)
                throw_error(static_cast<dt_status_t>(rc), "compute plugin '", name,
                            "' could not start: ",
                            ctx->error_.empty() ? "(no reason given)" : ctx->error_);
            ctx->instance_ = instance;

            ctx->info_.struct_size = sizeof(ctx->info_);
            ctx->info_.abi_version = DT_COMPUTE_VERSION;
            ctx->check("dt_compute_create", ops.info(instance, &ctx->info_));
            if (settings.compute_dtype == DT_BFLOAT16 && ctx->info_.compute_dtype != DTP_BFLOAT16)
                DT_LOG(warn, "compute", name, ": bf16 compute was requested but ",
                       ctx->info_.device_name != nullptr ? ctx->info_.device_name : "the device",
                       " has no bfloat16 hardware; computing in f32");
            DT_LOG(info, "compute", "plugin ", name, " on ",
                   ctx->info_.device_name != nullptr ? ctx->info_.device_name : "?", ", ",
                   ctx->info_.threads, " thread(s), compute dtype ",
                   dtype_label(ctx->info_.compute_dtype), ", bf16 hardware ",
                   ctx->info_.bf16_native ? "yes" : "no");
            return ctx;
        } catch (const Error &e) {
            if (settings.plugins.size() == 1)
                throw;
            DT_LOG(info, "compute", "compute plugin '", name, "' skipped: ", e.what());
            failures += cat("\n  ", name, ": ", e.what());
        }
    }
    throw_error(DT_ERR_PLUGIN_NOT_FOUND, "no compute plugin could be opened; tried:", failures,
                "\nset DISTTRAIN_COMPUTE to one that is installed (onednn, cudnn) or "
                "DISTTRAIN_PLUGIN_PATH to the folder that holds it");
}

void ComputeContext::check(const char *function, int32_t rc)
{
    if (rc == DTP_OK)
        return;
    std::string why = error_.empty() ? dt_status_string(static_cast<dt_status_t>(rc)) : error_;
    error_.clear();
    throw_error(static_cast<dt_status_t>(rc), function, ": ", name(), " plugin: ", why);
}

void *ComputeContext::scratch(const char *function, size_t bytes)
{
    if (bytes <= scratch_bytes_)
        return scratch_;
    if (scratch_ != nullptr) {
        // Work queued on a device may still read the old buffer.
        if (ops_.synchronize != nullptr) {
            error_.clear();
            check(function, ops_.synchronize(instance_));
        }
        error_.clear();
        check(function, ops_.free(instance_, scratch_));
        scratch_ = nullptr;
        scratch_bytes_ = 0;
    }
    error_.clear();
    void *p = nullptr;
    check(function, ops_.alloc(instance_, bytes, &p));
    scratch_ = p;
    scratch_bytes_ = bytes;
    return p;
}

void ComputeContext::unsupported(const char *function) const
{
    throw_error(DT_ERR_UNSUPPORTED, function, ": the ", name(),
                " compute plugin does not implement this operation; use another plugin "
                "(DISTTRAIN_COMPUTE)");
}

} // namespace dt::compute

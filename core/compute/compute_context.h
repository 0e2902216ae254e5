/* SPDX-License-Identifier: Apache-2.0 */
// A compute context: the negotiated compute plugin, its instance on one device and the
// services it borrows. Everything behind dt_compute_h.
#pragma once

#include "compute/settings.h"
#include "plugin/loader.h"

#include <disttrain/plugin/compute.h>

#include <memory>
#include <string>

namespace dt::compute {

class ComputeContext {
public:
    // Opens the first plugin of settings.plugins that loads and initialises; with
    // "auto" a failure is logged and the next is tried, otherwise it is thrown. When
    // every candidate fails, the error names each and its reason.
    static std::unique_ptr<ComputeContext> open(const Settings &settings);

    ~ComputeContext(); // finalizes the instance, then unloads the plugin
    ComputeContext(const ComputeContext &) = delete;
    ComputeContext &operator=(const ComputeContext &) = delete;

    const dt_compute_v1_t &ops() const { return ops_; }
    void *instance() const { return instance_; }
    const std::string &name() const { return plugin_->name(); }
    const dt_compute_info_t &info() const { return info_; }

    // Throws a dt::Error for a failed plugin call: the plugin's set_error message (or
    // its status string), prefixed with "<api function>: <plugin> plugin: ".
    void check(const char *function, int32_t rc);

    // Calls ops member `fn` (throwing DT_ERR_UNSUPPORTED when the plugin left it NULL)
    // with the instance and args, then check()s the result.
    template <typename Fn, typename... Args>
    void call(const char *function, Fn fn, Args... args)
    {
        if (fn == nullptr)
            unsupported(function);
        error_.clear();
        check(function, fn(instance_, args...));
    }

    // Throws DT_ERR_UNSUPPORTED naming the plugin and the operation.
    [[noreturn]] void unsupported(const char *function) const;

    // A plugin that answered compute ops version 1 reads neither the geometry's layout
    // nor bfloat16 activations beside float32 weights: it would take NHWC memory for NCHW
    // and float32 weights for bfloat16. These throw DT_ERR_UNSUPPORTED, naming the fix,
    // for such a plugin and a call that needs version 2.
    void require_layout(const char *function, int32_t layout) const;
    void require_dtypes(const char *function, const dtp_tensor_t &activations,
                        const dtp_tensor_t &weights) const;

    // A buffer of at least `bytes` in the plugin's memory (its alloc), kept for the next
    // call: the fused ops run as their unfused sequence on a plugin without them, and
    // the ReLU-masked gradient needs a place to live. It grows and never shrinks (a
    // network asks for the same sizes every step); it is freed with the instance.
    void *scratch(const char *function, size_t bytes);

    // The plugin's error message for the call in progress (services.set_error).
    std::string error_;

private:
    ComputeContext(std::unique_ptr<plugin::LoadedPlugin> plugin, const dt_compute_v1_t &ops);

    std::unique_ptr<plugin::LoadedPlugin> plugin_;
    dt_compute_v1_t ops_{};
    void *instance_ = nullptr;
    dt_compute_info_t info_{};
    void *scratch_ = nullptr;
    size_t scratch_bytes_ = 0;
};

} // namespace dt::compute

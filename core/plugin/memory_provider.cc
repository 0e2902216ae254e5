// SPDX-License-Identifier: Apache-2.0
// Opening a memory provider and asking it where pointers live. The table is checked and
// copied once at load, so a call never reads past what an older plugin defined.
#include "plugin/memory_provider.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace dt::plugin {

// The plugin ABI passes memory types as plain ints with the values of the public enum.
static_assert(DTP_MEMORY_HOST == DT_MEMORY_HOST && DTP_MEMORY_DEVICE == DT_MEMORY_DEVICE);

std::string check_memory_ops(const void *ops)
{
    const auto *t = static_cast<const dt_memory_v1_t *>(ops);
    if (t->struct_size < offsetof(dt_memory_v1_t, pointer_query) + sizeof(t->pointer_query))
        return cat("its memory table's struct_size ", t->struct_size,
                   " is too small for version 1, which needs at least init, finalize "
                   "and pointer_query");
    if (t->init == nullptr || t->finalize == nullptr || t->pointer_query == nullptr)
        return "its memory table leaves init, finalize or pointer_query NULL, which every "
               "memory provider must have";
    return {};
}

MemoryProvider::MemoryProvider(std::shared_ptr<LoadedPlugin> plugin,
                               const dt_memory_v1_t *ops, void *instance)
    : plugin_(std::move(plugin)), instance_(instance)
{
    std::memcpy(&ops_, ops, std::min<size_t>(ops->struct_size, sizeof(ops_)));
    ops_.struct_size = sizeof(ops_);
}

MemoryProvider::~MemoryProvider()
{
    for (void *event : spare_events_)
        ops_.event_destroy(instance_, event);
    int32_t rc = ops_.finalize(instance_);
    if (rc != DTP_OK)
        DT_LOG(warn, "plugin", "memory provider '", plugin_->name(), "' failed to finalize: ",
               dt_status_string(static_cast<dt_status_t>(rc)));
}

PointerMemory MemoryProvider::classify(const void *ptr) const
{
    dt_memory_pointer_info_t info{};
    info.struct_size = sizeof(info);
    info.abi_version = DT_MEMORY_VERSION;
    info.memory_type = DTP_MEMORY_HOST;
    info.device = -1;
    set_last_error("");
    int32_t rc = ops_.pointer_query(instance_, ptr, &info);
    if (rc != DTP_OK) {
        std::string detail = last_error();
        throw_error(rc < 0 ? static_cast<dt_status_t>(rc) : DT_ERR_INTERNAL,
                    "memory provider '", plugin_->name(), "' could not say where ", ptr,
                    " lives: ", detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                                : detail);
    }
    if (info.memory_type == DTP_MEMORY_DEVICE)
        return {DT_MEMORY_DEVICE, info.device};
    if (info.memory_type == DTP_MEMORY_HOST)
        return {DT_MEMORY_HOST, -1};
    throw_error(DT_ERR_INTERNAL, "memory provider '", plugin_->name(), "' answered memory type ",
                info.memory_type, " for ", ptr, ", which is neither host nor device; the "
                "plugin is broken");
}

// More collectives than this in flight at once are rare; their extra events are destroyed.
constexpr size_t kSpareEvents = 64;

void *MemoryProvider::take_event(int32_t &rc) const
{
    {
        std::lock_guard lock(events_mutex_);
        if (!spare_events_.empty()) {
            void *event = spare_events_.back();
            spare_events_.pop_back();
            rc = DTP_OK;
            return event;
        }
    }
    void *event = nullptr;
    rc = ops_.event_create(instance_, &event);
    return rc == DTP_OK ? event : nullptr;
}

void MemoryProvider::give_back_event(void *event) const
{
    {
        std::lock_guard lock(events_mutex_);
        if (spare_events_.size() < kSpareEvents) {
            spare_events_.push_back(event);
            return;
        }
    }
    ops_.event_destroy(instance_, event);
}

std::shared_ptr<void> MemoryProvider::ready_event(void *stream) const
{
    if (ops_.event_create == nullptr || ops_.event_record == nullptr ||
        ops_.event_destroy == nullptr || ops_.stream_wait_event == nullptr)
        return nullptr;
    set_last_error("");
    int32_t rc = DTP_OK;
    void *event = take_event(rc);
    if (rc == DTP_OK) {
        rc = ops_.event_record(instance_, event, stream);
        // Every operation holding the event ends before the context lets the provider go.
        if (rc == DTP_OK)
            return {event, [this](void *e) { give_back_event(e); }};
    }
    std::string detail = last_error();
    if (event != nullptr)
        ops_.event_destroy(instance_, event); // one that failed to record is not reused
    throw_error(rc < 0 ? static_cast<dt_status_t>(rc) : DT_ERR_INTERNAL, "memory provider '",
                plugin_->name(), "' could not record the producer stream's progress for a "
                "collective: ", detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                                : detail);
}

std::unique_ptr<MemoryProvider> open_memory(const std::string &name, const char *from,
                                            const dt_memory_init_args_t &args,
                                            const dt_host_services_t *services)
{
    try {
        std::shared_ptr<LoadedPlugin> plugin = load("memory", name, services);
        const auto *ops = static_cast<const dt_memory_v1_t *>(plugin->ops());
        // A failed init explains itself through services->set_error (the thread's last
        // error); clear it so an older message is never blamed on this plugin.
        set_last_error("");
        void *instance = nullptr;
        int32_t rc = ops->init(&args, &instance);
        if (rc != DTP_OK) {
            std::string detail = last_error();
            throw_error(rc < 0 ? static_cast<dt_status_t>(rc) : DT_ERR_INTERNAL,
                        "memory provider '", name, "' (", plugin->path(),
                        ") failed to initialise: ",
                        detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                       : detail);
        }
        auto provider = std::make_unique<MemoryProvider>(std::move(plugin), ops, instance);
        DT_LOG(info, "plugin", "using memory provider '", name, "' from ", provider->path());
        return provider;
    } catch (const Error &e) {
        throw_error(e.status(), from, "='", name, "': ", e.what());
    }
}

} // namespace dt::plugin

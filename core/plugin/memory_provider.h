/* SPDX-License-Identifier: Apache-2.0 */
// A loaded memory-provider plugin (api/disttrain/plugin/memory.h), initialised and kept
// for the context's lifetime. It is the context's MemoryClassifier, so DT_MEMORY_AUTO
// asks it where a buffer lives; its other services (allocation, copies, streams, events)
// are there for the staging path, which is the next user.
#pragma once

#include "plugin/loader.h"
#include "runtime/memory_classifier.h"

#include <disttrain/plugin/memory.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dt::plugin {

// Why a memory table cannot be used (empty: it can): a struct_size too small for the
// version it claims, or a NULL init, finalize or pointer_query. The loader calls it on
// every memory plugin's answer.
std::string check_memory_ops(const void *ops);

class MemoryProvider final : public MemoryClassifier {
public:
    MemoryProvider(std::shared_ptr<LoadedPlugin> plugin, const dt_memory_v1_t *ops,
                   void *instance);
    ~MemoryProvider() override; // finalizes the instance, then lets the plugin go
    MemoryProvider(const MemoryProvider &) = delete;
    MemoryProvider &operator=(const MemoryProvider &) = delete;

    const char *provider() const noexcept override { return plugin_->name().c_str(); }
    PointerMemory classify(const void *ptr) const override;

    const std::string &path() const { return plugin_->path(); }

    // An event recorded now on stream (the producer's; null: the default), that staging
    // makes its own copies wait for: they then start once the producer's work up to
    // this moment has run, not after what it queues later. Destroyed with the last
    // copy of the pointer, when it goes back to a pool of spare events (every waiter has
    // captured its record by then, and a new record replaces it). Null where the
    // provider cannot record events or make a stream wait for one (staging then copies
    // on the producer's stream). Thread safe; throws dt::Error when the provider fails.
    std::shared_ptr<void> ready_event(void *stream) const;
    // The event a device call is ordered by: `ready`, recorded when the call was made, or
    // where the call recorded none (a blocking call: its caller queues nothing on the
    // stream until it returns, so an event recorded now marks the same work) one
    // recorded on `stream` now, kept alive by `held`. Null as ready_event.
    void *ready_or_now(void *stream, void *ready, std::shared_ptr<void> &held) const
    {
        if (ready != nullptr)
            return ready;
        held = ready_event(stream);
        return held.get();
    }
    // The table (v1, copied to its full size with NULL for members an older plugin's
    // struct_size leaves out) and the instance, for the paths that copy through it.
    const dt_memory_v1_t &ops() const { return ops_; }
    void *instance() const { return instance_; }

private:
    // A spare event, or a new one (null and rc set when the provider fails).
    void *take_event(int32_t &rc) const;
    void give_back_event(void *event) const;

    std::shared_ptr<LoadedPlugin> plugin_;
    dt_memory_v1_t ops_{};
    void *instance_;
    // Creating and destroying an event per collective cost about a microsecond of each
    // call on an H100; these are recorded again instead.
    mutable std::mutex events_mutex_;
    mutable std::vector<void *> spare_events_;
};

// Loads the memory provider `name` and initialises it. `from` says where the name came
// from (DISTTRAIN_MEMORY or dt_context_params_t.memory). Errors name it and the value:
// DT_ERR_PLUGIN_NOT_FOUND with the folders searched, the loader's other errors, or the
// plugin's own init failure with its message.
std::unique_ptr<MemoryProvider> open_memory(const std::string &name, const char *from,
                                            const dt_memory_init_args_t &args,
                                            const dt_host_services_t *services);

} // namespace dt::plugin

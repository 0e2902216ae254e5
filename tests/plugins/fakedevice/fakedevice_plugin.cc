// SPDX-License-Identifier: Apache-2.0
// A test-only memory provider that behaves like a GPU runtime without one: device memory
// the CPU cannot touch (fakedevice_arena.h), in-order streams with a delay and events
// that complete when their stream reaches them (fakedevice_stream.h). Pinned host memory
// is plain malloc'd memory. Built whenever tests are on; never installed.
#include "fakedevice_arena.h"
#include "fakedevice_stream.h"

#include <disttrain/plugin/memory.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fakedevice {
namespace {

struct Instance {
    void *host = nullptr;
    const dt_host_services_t *services = nullptr;
    Arena *arena = nullptr;
    std::chrono::microseconds delay{0};
    std::unique_ptr<Stream> default_stream; // stream NULL: like CUDA's default stream
    std::mutex mutex;
    std::unordered_map<void *, std::unique_ptr<Stream>> streams;   // under mutex
    std::vector<std::unique_ptr<Stream>> retired;                  // joined at finalize
    std::unordered_map<void *, std::shared_ptr<Event>> events;     // under mutex
    std::set<void *> pinned;                                       // under mutex
};

Instance *self(void *m) { return static_cast<Instance *>(m); }

// Every live stream of every instance. A real runtime's streams are the process's: the
// user's own cudaStream_t, handed to the core in dt_op_params_t, works with the core's
// instance of the provider. So does a stream of the test's own instance here.
std::mutex g_streams_mutex;
std::unordered_map<void *, Stream *> g_streams; // under g_streams_mutex

void register_stream(void *handle, Stream *stream)
{
    std::lock_guard<std::mutex> lock(g_streams_mutex);
    if (stream != nullptr)
        g_streams[handle] = stream;
    else
        g_streams.erase(handle);
}

int32_t fail(Instance *in, int32_t rc, const std::string &why)
{
    if (in != nullptr && in->services != nullptr && in->services->set_error != nullptr)
        in->services->set_error(in->host, ("fakedevice: " + why).c_str());
    return rc;
}

size_t env_size(const char *name, size_t fallback)
{
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

int32_t init(const dt_memory_init_args_t *args, void **m)
{
    if (args == nullptr || m == nullptr || args->struct_size < sizeof(dt_memory_init_args_t))
        return DTP_ERR_INVALID_ARGUMENT;
    auto in = std::make_unique<Instance>();
    in->host = args->host;
    in->services = args->services;
    in->delay = std::chrono::microseconds(env_size("DISTTRAIN_FAKE_DEVICE_DELAY_US", 0));
    try {
        in->arena = &acquire_arena();
        in->default_stream = std::make_unique<Stream>(in->delay);
    } catch (const std::exception &e) {
        if (in->arena != nullptr)
            release_arena();
        return fail(in.get(), DTP_ERR_UNSUPPORTED, e.what());
    }
    *m = in.release();
    return DTP_OK;
}

int32_t finalize(void *m)
{
    std::unique_ptr<Instance> in(self(m));
    for (auto &[handle, stream] : in->streams)
        register_stream(handle, nullptr);
    in->default_stream.reset(); // each joins its worker after running its queue
    in->streams.clear();
    in->retired.clear();
    for (void *p : in->pinned)
        std::free(p);
    release_arena();
    return DTP_OK;
}

int32_t pointer_query(void *m, const void *ptr, dt_memory_pointer_info_t *info)
{
    // No lock and no wait: the arena's bounds never change while an instance lives.
    const bool device = self(m)->arena->contains(ptr);
    info->memory_type = device ? DTP_MEMORY_DEVICE : DTP_MEMORY_HOST;
    info->device = device ? 0 : -1;
    return DTP_OK;
}

int32_t device_alloc(void *m, int32_t device, size_t bytes, void **ptr)
{
    if (device > 0)
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT, "there is only device 0");
    *ptr = self(m)->arena->allocate(bytes);
    return *ptr != nullptr ? DTP_OK
                           : fail(self(m), DTP_ERR_NO_MEMORY, "device memory is full "
                                  "(DISTTRAIN_FAKE_DEVICE_BYTES)");
}

int32_t device_free(void *m, void *ptr)
{
    return self(m)->arena->release(ptr)
               ? DTP_OK
               : fail(self(m), DTP_ERR_INVALID_ARGUMENT, "device_free of a pointer "
                      "device_alloc did not return");
}

int32_t host_alloc(void *m, size_t bytes, void **ptr)
{
    *ptr = std::malloc(bytes == 0 ? 1 : bytes);
    if (*ptr == nullptr)
        return fail(self(m), DTP_ERR_NO_MEMORY, "host_alloc: out of memory");
    std::lock_guard<std::mutex> lock(self(m)->mutex);
    self(m)->pinned.insert(*ptr);
    return DTP_OK;
}

// Returns once everything queued so far on s has run.
void drain(Stream &s)
{
    auto done = std::make_shared<Event>();
    s.record(done);
    while (!done->done())
        std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// As cudaFreeHost, which synchronizes with the device: a copy still queued into the
// buffer (one of a call that timed out, say) runs first, on every stream, destroyed ones
// included, instead of writing into freed memory.
int32_t host_free(void *m, void *ptr)
{
    Instance *in = self(m);
    std::vector<Stream *> queues;
    {
        std::lock_guard<std::mutex> lock(in->mutex);
        if (in->pinned.count(ptr) == 0)
            return fail(in, DTP_ERR_INVALID_ARGUMENT, "host_free of a pointer host_alloc "
                        "did not return");
        queues.push_back(in->default_stream.get());
        for (auto &[handle, stream] : in->streams)
            queues.push_back(stream.get());
        for (auto &stream : in->retired)
            queues.push_back(stream.get());
    }
    for (Stream *s : queues)
        drain(*s);
    std::lock_guard<std::mutex> lock(in->mutex);
    in->pinned.erase(ptr);
    std::free(ptr);
    return DTP_OK;
}

int32_t stream_create(void *m, int32_t device, void **stream)
{
    if (device > 0)
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT, "there is only device 0");
    auto s = std::make_unique<Stream>(self(m)->delay);
    *stream = s.get();
    register_stream(*stream, s.get());
    std::lock_guard<std::mutex> lock(self(m)->mutex);
    self(m)->streams.emplace(*stream, std::move(s));
    return DTP_OK;
}

int32_t stream_destroy(void *m, void *stream)
{
    // Not joined here: the ABI says destroy does not wait for queued work.
    std::lock_guard<std::mutex> lock(self(m)->mutex);
    auto it = self(m)->streams.find(stream);
    if (it == self(m)->streams.end())
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT, "stream_destroy of an unknown stream");
    register_stream(stream, nullptr);
    self(m)->retired.push_back(std::move(it->second));
    self(m)->streams.erase(it);
    return DTP_OK;
}

Stream *find_stream(Instance *in, void *stream)
{
    if (stream == nullptr)
        return in->default_stream.get();
    std::lock_guard<std::mutex> lock(g_streams_mutex);
    auto it = g_streams.find(stream);
    return it != g_streams.end() ? it->second : nullptr;
}

int32_t copy_async(void *m, void *dst, const void *src, size_t bytes, int32_t direction,
                   void *stream)
{
    Instance *in = self(m);
    const bool src_dev = in->arena->contains(src, bytes);
    const bool dst_dev = in->arena->contains(dst, bytes);
    const bool ok = (direction == DTP_MEMORY_COPY_HOST_TO_DEVICE && !src_dev && dst_dev) ||
                    (direction == DTP_MEMORY_COPY_DEVICE_TO_HOST && src_dev && !dst_dev) ||
                    (direction == DTP_MEMORY_COPY_DEVICE_TO_DEVICE && src_dev && dst_dev);
    if (!ok)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "copy_async: the pointers do not match "
                    "the direction (or a device range runs past its allocation)");
    Stream *s = find_stream(in, stream);
    if (s == nullptr)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "copy_async on an unknown stream");
    s->copy(dst_dev ? in->arena->shadow(dst) : dst,
            src_dev ? in->arena->shadow(src) : src, bytes);
    return DTP_OK;
}

int32_t event_create(void *m, void **event)
{
    auto e = std::make_shared<Event>();
    *event = e.get();
    std::lock_guard<std::mutex> lock(self(m)->mutex);
    self(m)->events.emplace(*event, std::move(e));
    return DTP_OK;
}

int32_t event_destroy(void *m, void *event)
{
    std::lock_guard<std::mutex> lock(self(m)->mutex);
    return self(m)->events.erase(event) == 1
               ? DTP_OK
               : fail(self(m), DTP_ERR_INVALID_ARGUMENT, "event_destroy of an unknown event");
}

std::shared_ptr<Event> find_event(Instance *in, void *event)
{
    std::lock_guard<std::mutex> lock(in->mutex);
    auto it = in->events.find(event);
    return it != in->events.end() ? it->second : nullptr;
}

int32_t event_record(void *m, void *event, void *stream)
{
    auto e = find_event(self(m), event);
    Stream *s = find_stream(self(m), stream);
    if (e == nullptr || s == nullptr)
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT, "event_record: unknown event or stream");
    s->record(std::move(e));
    return DTP_OK;
}

int32_t event_query(void *m, void *event)
{
    auto e = find_event(self(m), event);
    if (e == nullptr)
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT, "event_query of an unknown event");
    return e->done() ? DTP_OK : DTP_INPROGRESS;
}

int32_t stream_wait_event(void *m, void *stream, void *event)
{
    auto e = find_event(self(m), event);
    Stream *s = find_stream(self(m), stream);
    if (e == nullptr || s == nullptr)
        return fail(self(m), DTP_ERR_INVALID_ARGUMENT,
                    "stream_wait_event: unknown event or stream");
    s->wait(std::move(e));
    return DTP_OK;
}

const dt_memory_v1_t kOps = {
    sizeof(dt_memory_v1_t), DT_MEMORY_VERSION_1, "fakedevice",
    init, finalize, pointer_query, device_alloc, device_free, host_alloc, host_free,
    stream_create, stream_destroy, copy_async, event_create, event_destroy, event_record,
    event_query, stream_wait_event,
};

} // namespace
} // namespace fakedevice

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer)
{
    answer->kind = DT_PLUGIN_KIND_MEMORY;
    answer->name = "fakedevice";
    if (offer->max_ops_version < DT_MEMORY_VERSION_1) {
        answer->decline_reason = "fakedevice speaks only memory ops version 1";
        return DTP_ERR_UNSUPPORTED;
    }
    answer->ops_version = DT_MEMORY_VERSION_1;
    answer->ops = &fakedevice::kOps;
    return DTP_OK;
}

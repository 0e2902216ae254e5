// SPDX-License-Identifier: Apache-2.0
#include "routing/staging.h"

#include "plugin/memory_provider.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <sys/prctl.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace dt::routing {

namespace {

// Buffers grow in steps of at least this, so a run of slightly growing calls does not
// reallocate pinned memory each time.
constexpr size_t kMinBuffer = size_t{1} << 20;

const dt_memory_v1_t &ops(const plugin::MemoryProvider &p) { return p.ops(); }

} // namespace

Staging::Staging(plugin::MemoryProvider &provider) : provider_(provider)
{
    const dt_memory_v1_t &o = ops(provider_);
    if (o.host_alloc == nullptr || o.host_free == nullptr || o.copy_async == nullptr ||
        o.event_create == nullptr || o.event_destroy == nullptr ||
        o.event_record == nullptr || o.event_query == nullptr)
        throw_error(DT_ERR_PLUGIN_ABI, "memory provider '", provider_.provider(),
                    "' cannot stage device memory through host buffers: it lacks one of "
                    "host_alloc, host_free, copy_async, event_create, event_destroy, "
                    "event_record, event_query");
    set_last_error("");
    int32_t rc = o.event_create(provider_.instance(), &event_);
    if (rc != DTP_OK)
        fail(rc, "event_create", "staging");
    if (o.stream_create != nullptr && o.stream_destroy != nullptr) {
        rc = o.stream_create(provider_.instance(), -1, &own_stream_);
        if (rc != DTP_OK) {
            o.event_destroy(provider_.instance(), event_);
            fail(rc, "stream_create", "staging");
        }
    }
}

Staging::~Staging()
{
    const dt_memory_v1_t &o = ops(provider_);
    // The stream, then the buffers: a copy of a call that timed out may still be queued
    // on it, and freeing pinned memory waits for the device's queued work (cudaFreeHost
    // synchronizes; the fake device's host_free drains its streams), so the copy still
    // lands in a live buffer.
    if (own_stream_ != nullptr)
        o.stream_destroy(provider_.instance(), own_stream_);
    for (void *&p : slots_)
        if (p != nullptr && o.host_free(provider_.instance(), p) != DTP_OK)
            DT_LOG(warn, "staging", "memory provider '", provider_.provider(),
                   "' failed to free a pinned buffer: ", last_error());
    if (event_ != nullptr)
        o.event_destroy(provider_.instance(), event_);
}

const char *Staging::provider() const noexcept { return provider_.provider(); }

void *Staging::buffer(int slot, size_t bytes)
{
    if (bytes <= capacity_[slot])
        return slots_[slot];
    const dt_memory_v1_t &o = ops(provider_);
    if (slots_[slot] != nullptr) {
        o.host_free(provider_.instance(), slots_[slot]);
        slots_[slot] = nullptr;
        capacity_[slot] = 0;
    }
    const size_t want = std::max({bytes, kMinBuffer, capacity_[slot] * 2});
    set_last_error("");
    void *p = nullptr;
    int32_t rc = o.host_alloc(provider_.instance(), want, &p);
    if (rc != DTP_OK || p == nullptr)
        fail(rc == DTP_OK ? DT_ERR_NO_MEMORY : rc, "host_alloc", "a pinned staging buffer");
    slots_[slot] = p;
    capacity_[slot] = want;
    DT_LOG(debug, "staging", "pinned staging buffer ", slot, ": ", want, " bytes");
    return p;
}

void *Staging::after(void *producer, void *ready)
{
    const dt_memory_v1_t &o = ops(provider_);
    if (own_stream_ == nullptr || o.stream_wait_event == nullptr)
        return producer;
    // One recorded now goes back on return: the wait captures it.
    std::shared_ptr<void> recorded;
    ready = provider_.ready_or_now(producer, ready, recorded);
    if (ready == nullptr)
        return producer; // the provider records no events
    set_last_error("");
    int32_t rc = o.stream_wait_event(provider_.instance(), own_stream_, ready);
    if (rc != DTP_OK)
        fail(rc, "stream_wait_event", "staging");
    return own_stream_;
}

void Staging::to_host(void *dst, const void *src, size_t bytes, void *stream)
{
    set_last_error("");
    int32_t rc = ops(provider_).copy_async(provider_.instance(), dst, src, bytes,
                                           DTP_MEMORY_COPY_DEVICE_TO_HOST, stream);
    if (rc != DTP_OK)
        fail(rc, "copy_async (device to host)", "staging");
}

void Staging::to_device(void *dst, const void *src, size_t bytes, void *stream)
{
    set_last_error("");
    int32_t rc = ops(provider_).copy_async(provider_.instance(), dst, src, bytes,
                                           DTP_MEMORY_COPY_HOST_TO_DEVICE, stream);
    if (rc != DTP_OK)
        fail(rc, "copy_async (host to device)", "staging");
}

void Staging::wait(void *stream, const algo::Comm &comm, const char *what)
{
    set_last_error("");
    int32_t rc = ops(provider_).event_record(provider_.instance(), event_, stream);
    if (rc != DTP_OK)
        fail(rc, "event_record", what);
    wait_event(event_, comm, what);
}

void Staging::wait_event(void *event, const algo::Comm &comm, const char *what)
{
    const dt_memory_v1_t &o = ops(provider_);
    int32_t rc;
    // Yield for up to kSpin (a copy of a small tensor completes in microseconds, and a
    // training step waits on hundreds of them), then sleep in short steps: the device may
    // be busy with the step's other work for milliseconds. The sleeps are short only with
    // a small timer slack (Linux's default of 50 us would stretch each).
    constexpr auto kSpin = std::chrono::microseconds(200);
    static thread_local bool slack_set = false;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); // 1 us; a failure only costs speed
        slack_set = true;
    }
    const auto start = algo::Clock::now();
    for (;;) {
        rc = o.event_query(provider_.instance(), event);
        if (rc == DTP_OK)
            return;
        if (rc != DTP_INPROGRESS)
            fail(rc, "event_query", what);
        const std::atomic<bool> *cancel = comm.cancel_flag();
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed))
            throw_error(DT_ERR_ABORTED, what, ": aborted (dt_context_abort) while waiting "
                        "for the device's copies through memory provider '", provider(), "'");
        if (algo::Clock::now() >= comm.deadline())
            throw_error(DT_ERR_TIMEOUT, what, ": the device did not finish the work queued "
                        "before this collective and its staging copies within the deadline "
                        "(DISTTRAIN_TIMEOUT; memory provider '", provider(), "'); the "
                        "device may be stuck, or a kernel on the producer's stream never "
                        "ends");
        if (algo::Clock::now() - start < kSpin)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

void Staging::fail(int32_t rc, const char *step, const char *what)
{
    std::string detail = last_error();
    throw_error(rc < 0 ? static_cast<dt_status_t>(rc) : DT_ERR_INTERNAL, what,
                ": memory provider '", provider(), "' failed in ", step, ": ",
                detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc)) : detail);
}

} // namespace dt::routing

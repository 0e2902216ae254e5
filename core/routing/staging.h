/* SPDX-License-Identifier: Apache-2.0 */
// Device memory on paths that only read host memory: pinned host buffers from the memory
// provider, copies on a stream of the staging's own that waits for the event recorded on
// the producer's stream when the collective was called (so a copy starts once the work
// that wrote its buffer has run, and neither waits for the producer's later work nor
// holds it up), and waits that poll the provider's events against the operation's
// deadline and abort flag. A stuck device becomes DT_ERR_TIMEOUT, never a hang.
//
// Why a stream of its own: the engine runs a call well after the caller queued more work
// (the rest of backward); copies queued on the producer's stream then wait for all of
// it. Measured on an H200 with 2 ranks of ResNet-50 sharing the GPU, that held every
// gradient's allreduce until backward had ended. And a stream of its own is drained when
// the context ends, before the buffers are freed: a copy still queued on the producer's
// stream after a timeout would write into freed memory.
//
// The pinned buffers are kept and grown (never shrunk) for the context's lifetime:
// allocating pinned memory costs far more than a collective on it. One engine thread uses
// a Staging at a time.
#pragma once

#include "algorithms/comm.h"

#include <cstddef>

namespace dt::plugin {
class MemoryProvider;
}

namespace dt::routing {

class Staging {
public:
    // Slots of pinned buffers a call may hold at once: what is sent, what is received.
    static constexpr int kSlots = 2;

    explicit Staging(plugin::MemoryProvider &provider);
    // Releases its stream, then the buffers (once the device ran what is still queued
    // into them: a timed-out call's copy) and the event.
    ~Staging();
    Staging(const Staging &) = delete;
    Staging &operator=(const Staging &) = delete;

    const char *provider() const noexcept;

    // Pinned host buffer `slot` of at least bytes (> 0). Growing a slot frees its old
    // buffer, so call it only while no copy from that slot is queued.
    void *buffer(int slot, size_t bytes);

    // The stream for copies from a buffer that `producer` wrote before the call that
    // recorded `ready` (null: a blocking call, which records none: one is recorded now):
    // the staging's own, made to wait for that event, or the producer's stream where the
    // provider cannot make a stream wait or records no events.
    void *after(void *producer, void *ready);

    // Queue a copy on stream (one from after() or return_stream()) and return.
    void to_host(void *dst, const void *src, size_t bytes, void *stream);
    void to_device(void *dst, const void *src, size_t bytes, void *stream);

    // The stream for copies back to a buffer that `producer` wrote and whose copy to
    // the host has completed: the staging's own, or the producer's where the provider
    // makes no streams. Nothing else of the producer's touches the buffer until the
    // collective completes, and it completes only once the copy back has.
    void *return_stream(void *producer) const noexcept
    {
        return own_stream_ != nullptr ? own_stream_ : producer;
    }

    // Waits until everything queued on stream so far has run. Polls the provider's
    // event, sleeping briefly between polls (a host spinning on a busy device takes a
    // core from the training step). Throws DT_ERR_TIMEOUT at comm's deadline and
    // DT_ERR_ABORTED when its cancel flag turns, naming `what` (the call); the caller
    // fails the collective with it, so that the peers hear of it.
    void wait(void *stream, const algo::Comm &comm, const char *what);
    // Waits, in the same way, until an event recorded earlier (the ready event of a call)
    // has completed.
    void wait_event(void *event, const algo::Comm &comm, const char *what);

private:
    [[noreturn]] void fail(int32_t rc, const char *step, const char *what);

    plugin::MemoryProvider &provider_;
    void *event_ = nullptr;
    void *own_stream_ = nullptr; // null: the provider has no stream_create
    void *slots_[kSlots] = {};
    size_t capacity_[kSlots] = {};
};

} // namespace dt::routing

/* SPDX-License-Identifier: Apache-2.0 */
// How a device transport's native collectives wait for the producer of their buffers.
// The C API records an event on the producer's stream when an asynchronous device
// collective is called (OpDesc::ready). The device transport's plugin runs on a stream of
// its own, so something must order the two:
// - A blocking call records no event (its caller queues nothing on the stream until the
//   call returns). Where the plugin offers launch_on_stream and takes the memory
//   provider's streams (the nccl plugin and the cuda provider), the collective runs on
//   the producer's stream itself, which orders it with no event at all: PyTorch's
//   ProcessGroupNCCL does the same for async_op=False since 2.7, to save the event and
//   the stream wait per call.
// - Otherwise, where the plugin offers wait_event and understands the provider's events,
//   the wait is queued on the device and the host goes straight on to launch the
//   collective, as ProcessGroupNCCL does for asynchronous calls (a blocking call's event
//   is recorded then).
// - Otherwise (an older plugin without the members, a provider whose events the plugin
//   cannot read, such as the fake device's) the host polls the event until it completes,
//   then launches: correct, but every call pays the host's poll and the launch that
//   follows it (measured 2.7-7.6 us a call on an H100 with tests/bench/nccl_overhead.c).
#pragma once

#include "algorithms/comm.h"

#include <atomic>
#include <string>

namespace dt {
class Transport;
}

namespace dt::plugin {
class MemoryProvider;
}

namespace dt::routing {

class Staging;

class DeviceWait {
public:
    // runtime: the memory provider's ops-table name (dt_memory_v1_t.name, e.g. "cuda"),
    // which the plugin matches against the runtimes it can use; provider: records a
    // blocking call's event where one is needed; staging: the host wait, over the same
    // provider.
    DeviceWait(std::string runtime, plugin::MemoryProvider &provider, Staging &staging);

    // A blocking call's collective, about to start on `device`: asks the plugin to run it
    // on the producer's `stream` (launch_on_stream). True when the plugin took it; then
    // nothing else orders the call, and the collective must be the next call made to the
    // plugin. False when the plugin cannot (the caller then calls before()). Throws
    // dt::Error as before() does.
    bool on_producer_stream(Transport &device, void *stream, const char *what);

    // Makes the native collectives that `device` starts next wait for the producer: for
    // `ready`, the event recorded on the producer's stream at the call, or, where the call
    // recorded none (a blocking call), for one recorded on `stream` now. On the device
    // when the plugin takes the event, else on the host before returning. True when the
    // plugin queued it. Must be called while no collective is in flight on `device` and
    // outside a batch (the plugin ABI's rule). Throws dt::Error: the plugin failed the
    // wait (not a refusal), or the host wait timed out or was aborted, naming `what`; the
    // caller fails the collective with it so that the peers hear of it.
    bool before(Transport &device, void *stream, void *ready, const algo::Comm &comm,
                const char *what);

    // Calls that ran on their producer's stream, waited on the device and on the host so
    // far (the debug log reports them when the context ends).
    uint64_t on_stream() const noexcept { return on_stream_.load(std::memory_order_relaxed); }
    uint64_t on_device() const noexcept { return on_device_.load(std::memory_order_relaxed); }
    uint64_t on_host() const noexcept { return on_host_.load(std::memory_order_relaxed); }

private:
    std::string runtime_;
    plugin::MemoryProvider &provider_;
    Staging &staging_;
    // Set at the plugin's first refusal: its answer holds for the runtime, so later
    // calls take the next order without asking (and without its message each time).
    std::atomic<bool> stream_refused_{false};
    std::atomic<bool> refused_{false};
    std::atomic<uint64_t> on_stream_{0};
    std::atomic<uint64_t> on_device_{0};
    std::atomic<uint64_t> on_host_{0};
};

} // namespace dt::routing

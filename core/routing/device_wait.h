/* SPDX-License-Identifier: Apache-2.0 */
// How a device transport's native collectives wait for the producer of their buffers.
// The C API records an event on the producer's stream when a device collective is
// called (OpDesc::ready). The device transport's plugin runs on a stream of its own, so
// something must order the two. Where the plugin offers wait_event and understands the
// memory provider's events (the nccl plugin and the cuda provider: cudaStreamWaitEvent on
// its stream), the wait is queued on the device and the host goes straight on to launch
// the collective, as PyTorch's ProcessGroupNCCL does. Otherwise (an older plugin without
// the member, a provider whose events the plugin cannot read, such as the fake device's)
// the host polls the event until it completes, then launches: correct, but every call
// pays the host's poll and the launch that follows it (measured 2.7-7.6 us a call on an
// H100 with tests/bench/nccl_overhead.c).
#pragma once

#include "algorithms/comm.h"

#include <atomic>
#include <string>

namespace dt {
class Transport;
}

namespace dt::routing {

class Staging;

class DeviceWait {
public:
    // runtime: the memory provider's ops-table name (dt_memory_v1_t.name, e.g. "cuda"),
    // which the plugin matches against the runtimes it can wait for; staging: the host
    // wait, over the same provider.
    DeviceWait(std::string runtime, Staging &staging);

    // Makes the native collectives that `device` starts next wait for `ready`, the event
    // recorded on the producer's stream at the call: on the device when the plugin takes
    // it, else on the host before returning. True when the plugin queued it. Must be
    // called while no collective is in flight on `device` and outside a batch (the
    // plugin ABI's rule). Throws dt::Error: the plugin failed the wait (not a refusal),
    // or the host wait timed out or was aborted, naming `what`; the caller fails the
    // collective with it so that the peers hear of it.
    bool before(Transport &device, void *ready, const algo::Comm &comm, const char *what);

    // Calls that waited on the device and on the host so far (the debug log reports
    // them when the context ends).
    uint64_t on_device() const noexcept { return on_device_.load(std::memory_order_relaxed); }
    uint64_t on_host() const noexcept { return on_host_.load(std::memory_order_relaxed); }

private:
    std::string runtime_;
    Staging &staging_;
    // Set at the plugin's first refusal: its answer holds for the runtime, so later
    // calls wait on the host without asking (and without its message each time).
    std::atomic<bool> refused_{false};
    std::atomic<uint64_t> on_device_{0};
    std::atomic<uint64_t> on_host_{0};
};

} // namespace dt::routing

// SPDX-License-Identifier: Apache-2.0
#include "routing/device_wait.h"

#include "plugin/memory_provider.h"
#include "plugin/transport.h"
#include "routing/staging.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <memory>

namespace dt::routing {

DeviceWait::DeviceWait(std::string runtime, plugin::MemoryProvider &provider, Staging &staging)
    : runtime_(std::move(runtime)), provider_(provider), staging_(staging)
{
}

bool DeviceWait::on_producer_stream(Transport &device, void *stream, const char *what)
{
    const dt_transport_v3_t &ops = device.ops();
    if (ops.launch_on_stream == nullptr || stream_refused_.load(std::memory_order_relaxed))
        return false;
    set_last_error("");
    const int32_t rc = ops.launch_on_stream(device.instance(), runtime_.c_str(), stream);
    if (rc == DTP_OK) {
        if (on_stream_.fetch_add(1, std::memory_order_relaxed) == 0)
            DT_LOG(debug, "routing", "device transport '", device.name(), "' runs blocking "
                   "calls on their producer's stream (memory provider '", runtime_, "')");
        return true;
    }
    if (rc != DTP_ERR_UNSUPPORTED)
        throw_error(static_cast<dt_status_t>(rc), what, ": device transport '", device.name(),
                    "' could not take the producer's stream of memory provider '", runtime_,
                    "': ", last_error());
    stream_refused_.store(true, std::memory_order_relaxed);
    DT_LOG(debug, "routing", "device transport '", device.name(), "' cannot run calls on "
           "the streams of memory provider '", runtime_, "' (", last_error(), "): blocking "
           "calls wait for an event of their producer instead");
    set_last_error("");
    return false;
}

bool DeviceWait::before(Transport &device, void *stream, void *ready, const algo::Comm &comm,
                        const char *what)
{
    // One recorded now is released on return: the plugin and the host wait are done with
    // it by then.
    std::shared_ptr<void> recorded;
    ready = provider_.ready_or_now(stream, ready, recorded);
    if (ready == nullptr)
        return false; // the provider records no events: nothing to order
    const dt_transport_v3_t &ops = device.ops();
    if (ops.wait_event != nullptr && !refused_.load(std::memory_order_relaxed)) {
        set_last_error("");
        // The plugin captures the event's state now (CUDA: cudaStreamWaitEvent "uses the
        // most recently captured state at the time of the API call, and is not affected
        // by later calls to cudaEventRecord"; cudaEventDestroy of a pending event returns
        // at once and releases it once complete, per cuda_runtime_api.h), so the ready
        // event may be re-recorded or destroyed with its operation after this returns.
        const int32_t rc = ops.wait_event(device.instance(), runtime_.c_str(), ready);
        if (rc == DTP_OK) {
            if (on_device_.fetch_add(1, std::memory_order_relaxed) == 0)
                DT_LOG(debug, "routing", "device transport '", device.name(),
                       "' waits on the device for the producers' events of memory "
                       "provider '", runtime_, "'");
            return true;
        }
        if (rc != DTP_ERR_UNSUPPORTED)
            throw_error(static_cast<dt_status_t>(rc), what, ": device transport '",
                        device.name(), "' could not queue the wait for the producer's "
                        "event of memory provider '", runtime_, "': ", last_error());
        refused_.store(true, std::memory_order_relaxed);
        DT_LOG(debug, "routing", "device transport '", device.name(), "' cannot wait for "
               "the events of memory provider '", runtime_, "' on the device (",
               last_error(), "): the host waits for the producer before each call");
        set_last_error("");
    }
    on_host_.fetch_add(1, std::memory_order_relaxed);
    staging_.wait_event(ready, comm, what);
    return false;
}

} // namespace dt::routing

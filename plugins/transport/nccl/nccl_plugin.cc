// SPDX-License-Identifier: Apache-2.0
// The plugin's only exported symbol and its ops table: the entry points every transport
// shares (plugins/common/transport_entry.h), NCCL's native collectives and a capability
// answer of its own: device memory for native collectives, no point-to-point, no control
// traffic, so the core always runs it beside a host transport.
#include "nccl_context.h"
#include "nccl_error.h"

#include <transport_entry.h>

#include <utility>

namespace dt::nccl {
namespace {

struct Traits {
    using Context = nccl::Context;
    using Host = nccl::Host;
    using Error = NcclError;
    static constexpr const char *name = "nccl";
    static constexpr const char *services = "log, set_error, store_set and store_get";
    // ncclCommFinalize gets a moment; the destructor then releases what is left.
    static void finalize(Context &c) { c.finish(std::chrono::seconds(2)); }
};

using Entry = dtp::TransportEntry<Traits>;

template <typename Fn>
int32_t call(void *transport, Fn &&fn) {
    return Entry::call(transport, std::forward<Fn>(fn));
}

int32_t nccl_split(void *t, int32_t color, int32_t key, int32_t child_size,
                   int32_t timeout_ms, void **child) {
    if (child == nullptr) return DTP_ERR_INVALID_ARGUMENT;
    return call(t, [&](Context &c) { return c.split(color, key, child_size, timeout_ms, child); });
}

int32_t nccl_batch_begin(void *t) {
    return call(t, [&](Context &c) { return c.batch_begin(); });
}

int32_t nccl_batch_end(void *t) {
    return call(t, [&](Context &c) { return c.batch_end(); });
}

int32_t nccl_wait_event(void *t, const char *runtime, void *event) {
    return call(t, [&](Context &c) { return c.wait_event(runtime, event); });
}

int32_t nccl_launch_on_stream(void *t, const char *runtime, void *stream) {
    return call(t, [&](Context &c) { return c.launch_on_stream(runtime, stream); });
}

// Device memory for the native collectives only; no isend/irecv (NCCL has no tags to
// match the core's) and no DT_TRANSPORT_CAP_CONTROL.
int32_t nccl_query(void *t, dt_transport_caps_t *caps) {
    return Entry::write_caps(t, caps, 0, DT_TRANSPORT_MEMORY_DEVICE, 0);
}

const dt_transport_v3_t kOps = {
    sizeof(dt_transport_v3_t),
    DT_TRANSPORT_VERSION_3,
    Traits::name,
    Entry::init,
    Entry::finalize,
    Entry::isend,
    Entry::irecv,
    Entry::progress,
    Entry::abort,
    Entry::allreduce,
    Entry::broadcast,
    Entry::allgather,
    Entry::reduce_scatter,
    Entry::alltoall,
    Entry::barrier,
    nccl_query,
    nccl_split,
    nccl_batch_begin,
    nccl_batch_end,
    nccl_wait_event,
    nccl_launch_on_stream,
};

} // namespace
} // namespace dt::nccl

// Negotiation never loads NCCL or CUDA (it must not block); init does, and declines
// there with the reason when either is missing or there is no GPU.
extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    return dt::nccl::Entry::answer(offer, answer, &dt::nccl::kOps);
}

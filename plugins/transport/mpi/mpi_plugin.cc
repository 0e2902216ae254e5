// SPDX-License-Identifier: Apache-2.0
// The plugin's only exported symbol and its ops table: the entry points every transport
// shares (plugins/common/transport_entry.h) plus MPI's native collectives.
#include "mpi_context.h"
#include "mpi_error.h"
#include "mpi_runtime.h"

#include <transport_entry.h>

namespace dt::mpi {
namespace {

struct Traits {
    using Context = mpi::Context;
    using Host = mpi::Host;
    using Error = MpiError;
    static constexpr const char *name = "mpi";
    static constexpr const char *services = "log and set_error";
    // Lets the last sends complete; the destructor then fails what is still pending
    // and frees the communicators.
    static void finalize(Context &c) { c.finish_sends(std::chrono::seconds(2)); }
};

using Entry = dtp::TransportEntry<Traits>;

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
    Entry::query, // host only: a CUDA-aware MPI is not detected, so only host buffers
    nullptr,      // split: the core's algorithms serve its groups
    nullptr,      // batch_begin, batch_end: each call is issued on its own
    nullptr,
    nullptr,      // wait_event: host memory only, nothing to wait for on a device
    nullptr,      // launch_on_stream: likewise
};

} // namespace
} // namespace dt::mpi

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    // Checked here, before MPI_Init could start a singleton MPI that has no peers.
    const char *unusable = dt::mpi::mpi_usable() ? nullptr : dt::mpi::kNotLaunchedReason;
    return dt::mpi::Entry::answer(offer, answer, &dt::mpi::kOps, unusable);
}

// SPDX-License-Identifier: Apache-2.0
// The plugin's only exported symbol and its ops table, through the entry points every
// transport shares (plugins/common/transport_entry.h).
#include "ucx_context.h"
#include "ucx_error.h"

#include <transport_entry.h>

namespace dt::ucx {
namespace {

struct Traits {
    using Context = ucx::Context;
    using Host = ucx::Host;
    using Error = UcxError;
    static constexpr const char *name = "ucx";
    static constexpr const char *services = "log, set_error and the store";
    // The destructor closes the endpoints in flush mode unless the transport was aborted.
    static void finalize(Context &) {}
};

using Entry = dtp::TransportEntry<Traits>;

// No native collectives (UCP has none): the core runs its algorithms over isend/irecv.
constexpr dt_transport_v3_t kOps = Entry::point_to_point_ops();

} // namespace
} // namespace dt::ucx

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    return dt::ucx::Entry::answer(offer, answer, &dt::ucx::kOps);
}

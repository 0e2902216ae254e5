// SPDX-License-Identifier: Apache-2.0
// The plugin's only exported symbol and its ops table, through the entry points every
// transport shares (plugins/common/transport_entry.h).
#include "tcp_context.h"
#include "tcp_error.h"

#include <transport_entry.h>

#include <chrono>

namespace dt::tcp {
namespace {

struct Traits {
    using Context = tcp::Context;
    using Host = tcp::Host;
    using Error = TcpError;
    static constexpr const char *name = "tcp";
    static constexpr const char *services = "store, auth and random_bytes";
    // Before the destructor fails what is pending and closes everything: the peers get
    // the chance to read what this rank sent (its clean-exit notice above all).
    static void finalize(Context &c) { c.close_gracefully(std::chrono::milliseconds(2000)); }
};

using Entry = dtp::TransportEntry<Traits>;

// No native collectives: the core runs its algorithms over isend/irecv.
constexpr dt_transport_v3_t kOps = Entry::point_to_point_ops();

} // namespace
} // namespace dt::tcp

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer) {
    return dt::tcp::Entry::answer(offer, answer, &dt::tcp::kOps);
}

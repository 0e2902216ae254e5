/* SPDX-License-Identifier: Apache-2.0 */
// Transport ops tables of every version the core still speaks, checked and upgraded to
// the current internal table (dt_transport_v3_t). One adapter file per old version; each
// upgrades to the next version, so an old table climbs the chain one step at a time.
#pragma once

#include <disttrain/plugin/transport.h>

#include <cstdint>
#include <string>

namespace dt::plugin {

// Why a plugin's table of `version` cannot be used ("" when it can): a struct_size
// that is too small or absurd, an abi_version that disagrees with the negotiated one,
// or a required member (init, finalize, isend, irecv, progress) that is NULL.
std::string check_transport_ops(uint32_t version, const void *ops);

// The current table built from a checked table of `version`. Reads only
// min(struct_size, sizeof) bytes of it, so a shorter table gains NULL members, and a
// NULL query becomes the old plugins' answer (host_only_query).
dt_transport_v3_t upgrade_transport_ops(uint32_t version, const void *ops);

// Version 1 → 2: v1's members, NULL for abort and every native collective.
dt_transport_v2_t adapt_transport_v1(const dt_transport_v1_t &v1);

// Version 2 → 3: v2's members, and host_only_query as query.
dt_transport_v3_t adapt_transport_v2(const dt_transport_v2_t &v2);

// The answer a plugin that predates the query is taken to give: host memory only for
// point-to-point and native collectives (so it never sees a device pointer), and it
// carries the engine's control traffic (it always has).
int32_t host_only_query(void *transport, dt_transport_caps_t *caps);

} // namespace dt::plugin

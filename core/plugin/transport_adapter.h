// Transport ops tables of every version the core still speaks, checked and upgraded to
// the current internal table (dt_transport_v2_t). One adapter file per old version.
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
// min(struct_size, sizeof) bytes of it, so a shorter table gains NULL members.
dt_transport_v2_t upgrade_transport_ops(uint32_t version, const void *ops);

// Version 1 → current: v1's members, NULL for abort and every native collective.
dt_transport_v2_t adapt_transport_v1(const dt_transport_v1_t &v1);

} // namespace dt::plugin

/* SPDX-License-Identifier: Apache-2.0 */
// What a loaded transport accepts, as its query answered it (dt_transport_caps_t): the
// memory its point-to-point ops and its native collectives may be handed, and whether it
// can carry the engine's control traffic. Read once, right after init, and kept: the
// routing and the engine ask this value, never the plugin, on every call.
#pragma once

#include <disttrain/plugin/transport.h>

#include <cstdint>
#include <string>

namespace dt {

// The memory types of the plugin ABI, one bit each.
enum class TransportMemory : uint32_t {
    host = DT_TRANSPORT_MEMORY_HOST,
    device = DT_TRANSPORT_MEMORY_DEVICE,
};

struct TransportCaps {
    uint32_t p2p_memory = 0;    // TransportMemory bits isend/irecv accept
    uint32_t native_memory = 0; // TransportMemory bits the native collectives accept
    bool control = false;       // can carry the engine's control traffic

    // Whether buffers of memory type m may be handed to the point-to-point ops
    // (native false) or to the native collectives (native true).
    bool accepts(TransportMemory m, bool native) const
    {
        return ((native ? native_memory : p2p_memory) & static_cast<uint32_t>(m)) != 0;
    }
};

// Calls ops.query (never NULL once the adapters ran) on an initialised instance and
// checks the answer. Throws DT_ERR_PLUGIN_ABI, naming the transport and its file, when
// the query fails or contradicts itself (control traffic without host point-to-point).
// Memory bits this core does not know are dropped: it could never hand such memory over.
TransportCaps query_transport_caps(const dt_transport_v3_t &ops, void *instance,
                                   const std::string &name, const std::string &path);

} // namespace dt

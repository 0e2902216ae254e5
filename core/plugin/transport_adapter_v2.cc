// SPDX-License-Identifier: Apache-2.0
// Adapter for transport ops version 2 (no capability query). Version 3 kept v2's members
// in place and appended query, so the upgrade copies every member and answers the query
// for the plugin: a v2 (or, through the v1 adapter, v1) plugin was written when every
// buffer was host memory and its one transport carried everything, so that is what it is
// taken to accept. Which native collectives it runs stays its non-NULL members.
#include "plugin/transport_adapter.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace dt::plugin {

int32_t host_only_query(void *, dt_transport_caps_t *caps)
{
    constexpr size_t header = offsetof(dt_transport_caps_t, p2p_memory);
    if (caps == nullptr || caps->struct_size < header)
        return DTP_ERR_INVALID_ARGUMENT;
    dt_transport_caps_t answer{};
    answer.p2p_memory = DT_TRANSPORT_MEMORY_HOST;
    answer.native_memory = DT_TRANSPORT_MEMORY_HOST;
    answer.flags = DT_TRANSPORT_CAP_CONTROL;
    // The rule every plugin follows: the reader's header kept, then what fits its size.
    const size_t size = std::min<size_t>(caps->struct_size, sizeof(answer));
    std::memcpy(reinterpret_cast<char *>(caps) + header,
                reinterpret_cast<const char *>(&answer) + header, size - header);
    return DTP_OK;
}

dt_transport_v3_t adapt_transport_v2(const dt_transport_v2_t &v2)
{
    dt_transport_v3_t v3{};
    static_assert(sizeof(v2) <= sizeof(v3));
    std::memcpy(&v3, &v2, sizeof(v2)); // v3 starts with v2's members, in place
    v3.struct_size = sizeof(v3);
    v3.abi_version = DT_TRANSPORT_VERSION_3;
    v3.query = host_only_query;
    return v3;
}

} // namespace dt::plugin

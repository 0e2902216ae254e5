// SPDX-License-Identifier: Apache-2.0
// Checks a plugin's transport table and copies it into the current layout.
#include "plugin/transport_adapter.h"

#include "runtime/error.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace dt::plugin {

namespace {

// Every version starts with v1's members, so this is the least any table must hold.
constexpr size_t kMinTableSize = sizeof(dt_transport_v1_t);
// No real table comes near this; a larger struct_size is garbage, not a newer table.
constexpr size_t kMaxTableSize = 64 * 1024;

// Copies min(struct_size, sizeof(Table)) bytes of ops into a zeroed Table.
template <typename Table>
Table copy_table(const void *ops)
{
    uint32_t size = 0;
    std::memcpy(&size, ops, sizeof(size));
    Table table{};
    std::memcpy(&table, ops, std::min<size_t>(size, sizeof(Table)));
    return table;
}

} // namespace

std::string check_transport_ops(uint32_t version, const void *ops)
{
    uint32_t header[2] = {0, 0}; // struct_size, abi_version: present in every version
    std::memcpy(header, ops, sizeof(header));
    if (header[0] < kMinTableSize || header[0] > kMaxTableSize)
        return cat("its ops table has struct_size ", header[0], ", expected at least ",
                   kMinTableSize, " (the version 1 members)");
    if (header[1] != version)
        return cat("its ops table says abi_version ", header[1],
                   " but the plugin answered ops version ", version);
    dt_transport_v1_t v1 = copy_table<dt_transport_v1_t>(ops);
    const char *missing = v1.init == nullptr       ? "init"
                          : v1.finalize == nullptr ? "finalize"
                          : v1.isend == nullptr    ? "isend"
                          : v1.irecv == nullptr    ? "irecv"
                          : v1.progress == nullptr ? "progress"
                                                   : nullptr;
    if (missing != nullptr)
        return cat("its ops table has no ", missing, " (a required member)");
    return {};
}

dt_transport_v3_t upgrade_transport_ops(uint32_t version, const void *ops)
{
    switch (version) {
    case DT_TRANSPORT_VERSION_1:
        return adapt_transport_v2(adapt_transport_v1(copy_table<dt_transport_v1_t>(ops)));
    case DT_TRANSPORT_VERSION_2:
        return adapt_transport_v2(copy_table<dt_transport_v2_t>(ops));
    case DT_TRANSPORT_VERSION_3: {
        dt_transport_v3_t table = copy_table<dt_transport_v3_t>(ops);
        table.struct_size = sizeof(table);
        // A NULL member means "not supported"; for the query, the core's default is
        // the answer old plugins are taken to give.
        if (table.query == nullptr)
            table.query = host_only_query;
        return table;
    }
    default:
        throw_error(DT_ERR_INTERNAL, "no adapter for transport ops version ", version,
                    "; negotiation should have refused it");
    }
}

} // namespace dt::plugin

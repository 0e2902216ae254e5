// SPDX-License-Identifier: Apache-2.0
#include "plugin/transport_caps.h"

#include "runtime/error.h"
#include "telemetry/log.h"

namespace dt {

namespace {

constexpr uint32_t kKnownMemory = DT_TRANSPORT_MEMORY_HOST | DT_TRANSPORT_MEMORY_DEVICE;

std::string memory_names(uint32_t bits)
{
    std::string out;
    if (bits & DT_TRANSPORT_MEMORY_HOST)
        out = "host";
    if (bits & DT_TRANSPORT_MEMORY_DEVICE)
        out += out.empty() ? "device" : ", device";
    return out.empty() ? "none" : out;
}

} // namespace

TransportCaps query_transport_caps(const dt_transport_v3_t &ops, void *instance,
                                   const std::string &name, const std::string &path)
{
    // Zeroed first: a plugin built against an older, shorter struct leaves the members it
    // does not know at zero, which is what each of them is defined to mean.
    dt_transport_caps_t raw{};
    raw.struct_size = sizeof(raw);
    raw.abi_version = DT_TRANSPORT_VERSION;
    set_last_error("");
    const int32_t rc = ops.query(instance, &raw);
    if (rc != DTP_OK) {
        const std::string detail = last_error();
        throw_error(DT_ERR_PLUGIN_ABI, "transport '", name, "' (", path,
                    ") failed to say what it accepts (query): ",
                    detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                   : detail);
    }
    TransportCaps caps;
    caps.p2p_memory = raw.p2p_memory & kKnownMemory;
    caps.native_memory = raw.native_memory & kKnownMemory;
    caps.control = (raw.flags & DT_TRANSPORT_CAP_CONTROL) != 0;
    // Control traffic is small host buffers sent point to point; claiming it without
    // host point-to-point is a broken answer, not a choice the core can honour.
    if (caps.control && !caps.accepts(TransportMemory::host, false))
        throw_error(DT_ERR_PLUGIN_ABI, "transport '", name, "' (", path,
                    ") says it carries control traffic but its point-to-point accepts ",
                    memory_names(caps.p2p_memory), " memory, not host; the plugin is broken");
    DT_LOG(debug, "plugin", "transport '", name, "' accepts point-to-point: ",
           memory_names(caps.p2p_memory), "; native collectives: ",
           memory_names(caps.native_memory), "; control traffic: ",
           caps.control ? "yes" : "no");
    return caps;
}

} // namespace dt

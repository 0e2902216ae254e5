// SPDX-License-Identifier: Apache-2.0
// Choosing a transport from an ordered list with fallback (NCCL, libfabric): each name
// is loaded, negotiated and initialised in turn; the first that succeeds wins, and each
// failure is logged with its reason so a silent fallback never hides a broken plugin.
#include "plugin/loader.h"
#include "plugin/plugin_files.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <algorithm>
#include <exception>

namespace dt::plugin {

namespace {

// Expands "auto" in place to the transports found (tcp, the one that needs nothing,
// last) and drops repeated names.
std::vector<std::string> expand(const std::vector<std::string> &names)
{
    std::vector<std::string> out;
    auto add = [&out](const std::string &name) {
        if (std::find(out.begin(), out.end(), name) == out.end())
            out.push_back(name);
    };
    for (const auto &name : names.empty() ? std::vector<std::string>{"auto"} : names) {
        if (name != "auto") {
            add(name);
            continue;
        }
        bool has_tcp = false;
        for (const auto &found : available("transport")) {
            if (found == "tcp")
                has_tcp = true;
            else
                add(found);
        }
        if (has_tcp)
            add("tcp");
    }
    return out;
}

// The transport opened by open_transport is the context's host transport, so it must
// carry the engine's control traffic. A device-only transport (one that says it cannot)
// runs only beside one, opened by open_device_transport.
void require_control(const Transport &t)
{
    if (t.carries_control())
        return;
    throw_error(DT_ERR_INVALID_CONFIG, "transport '", t.name(), "' (", t.path(),
                ") cannot carry the engine's control traffic (it says so in its "
                "capabilities), and it would be the only transport; choose one that "
                "can (tcp, ucx, mpi) in DISTTRAIN_TRANSPORT");
}

std::unique_ptr<Transport> init_one(const std::string &name,
                                    const dt_transport_init_args_t &args,
                                    const dt_host_services_t *services)
{
    std::shared_ptr<LoadedPlugin> plugin = load("transport", name, services);
    const dt_transport_v3_t *ops = transport_ops(*plugin);

    // The plugin explains a failed init through services->set_error, which writes the
    // thread's last error; clear it first so an old message is never blamed on it.
    set_last_error("");
    void *instance = nullptr;
    int32_t rc = ops->init(&args, &instance);
    if (rc != DTP_OK) {
        std::string detail = last_error();
        throw_error(rc < 0 ? static_cast<dt_status_t>(rc) : DT_ERR_INTERNAL, "transport '",
                    name, "' (", plugin->path(), ") failed to initialise: ",
                    detail.empty() ? dt_status_string(static_cast<dt_status_t>(rc))
                                   : detail);
    }
    auto transport = std::make_unique<Transport>(plugin->name(), plugin->path(), ops,
                                                 instance, plugin->ops_version());
    transport->keep_alive(std::move(plugin));
    return transport;
}

std::unique_ptr<Transport> open_one(const std::string &name,
                                    const dt_transport_init_args_t &args,
                                    const dt_host_services_t *services)
{
    auto transport = init_one(name, args, services);
    require_control(*transport);
    return transport;
}

} // namespace

std::unique_ptr<Transport> open_transport(const std::vector<std::string> &names,
                                          const dt_transport_init_args_t &args,
                                          const dt_host_services_t *services)
{
    std::vector<std::string> tried = expand(names);
    if (tried.empty())
        throw_error(DT_ERR_PLUGIN_NOT_FOUND, "no transport plugin found for 'auto': "
                    "looked for libdt-transport-*.so in ", join_folders(search_path()),
                    "; set DISTTRAIN_PLUGIN_PATH to the folder that holds the plugins or "
                    "install a transport package");

    std::exception_ptr only_error;
    std::string reasons;
    dt_status_t status = DT_ERR_PLUGIN_NOT_FOUND;
    for (size_t i = 0; i < tried.size(); ++i) {
        const std::string &name = tried[i];
        try {
            auto transport = open_one(name, args, services);
            DT_LOG(info, "plugin", "using transport '", name, "' from ", transport->path());
            return transport;
        } catch (const Error &e) {
            // The last failure needs no line of its own: the error thrown below says it.
            if (i + 1 < tried.size())
                DT_LOG(warn, "plugin", "transport '", name, "' skipped, trying '",
                       tried[i + 1], "' next: ", e.what());
            only_error = std::current_exception();
            reasons += cat("\n  ", name, ": ", e.what());
            // The user's most preferred transport that exists explains the failure best.
            if (status == DT_ERR_PLUGIN_NOT_FOUND)
                status = e.status();
        }
    }
    if (tried.size() == 1)
        std::rethrow_exception(only_error);
    throw_error(status, "no transport could be opened; tried ", tried.size(),
                " in order:", reasons);
}

std::unique_ptr<Transport> open_device_transport(const std::string &name,
                                                 const dt_transport_init_args_t &args,
                                                 const dt_host_services_t *services)
{
    auto transport = init_one(name, args, services);
    if (!transport->accepts(TransportMemory::device, true))
        throw_error(DT_ERR_INVALID_CONFIG, "transport '", name, "' (", transport->path(),
                    ") runs no collective on device memory "
                    "(its capabilities say so); name a device transport such as nccl, or "
                    "none to stage device memory through the host transport");
    return transport;
}

} // namespace dt::plugin

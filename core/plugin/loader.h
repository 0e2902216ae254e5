/* SPDX-License-Identifier: Apache-2.0 */
// Plugin discovery and loading. A plugin is a file libdt-<kind>-<name>.so found in, in
// order: each folder of DISTTRAIN_PLUGIN_PATH (colon-separated), the folder beside
// libdisttrain.so (found with dladdr) and its disttrain/plugins subfolder, then the
// install folder (DT_PLUGIN_INSTALL_DIR). It is opened with RTLD_NOW | RTLD_LOCAL, its
// single entry point DT_PLUGIN_ENTRY is called with the core's offer, and an older ops
// table is upgraded by the adapters in this folder. A plugin that fails any step is
// logged with the reason and skipped.
#pragma once

#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include "plugin/transport.h"

#include <memory>
#include <string>
#include <vector>

namespace dt::plugin {

// The folders searched, in order, with duplicates removed.
std::vector<std::string> search_path();

// One negotiated plugin: dlopen handle (closed on destruction) and its answer.
class LoadedPlugin {
public:
    LoadedPlugin(void *handle, std::string path, uint32_t kind, uint32_t ops_version,
                 std::string name, const void *ops);
    ~LoadedPlugin();
    LoadedPlugin(const LoadedPlugin &) = delete;
    LoadedPlugin &operator=(const LoadedPlugin &) = delete;

    const std::string &path() const { return path_; }
    const std::string &name() const { return name_; }
    uint32_t kind() const { return kind_; }
    uint32_t ops_version() const { return ops_version_; }
    const void *ops() const { return ops_; }

private:
    void *handle_;
    std::string path_;
    uint32_t kind_;
    uint32_t ops_version_;
    std::string name_;
    const void *ops_;

    // Added: the transport table copied (min(struct_size, sizeof)) or upgraded from an
    // older version, owned here so it lives exactly as long as the plugin.
    std::unique_ptr<dt_transport_v3_t> transport_table_;
    friend const dt_transport_v3_t *transport_ops(const LoadedPlugin &plugin);
};

// Finds, opens and negotiates the plugin of `kind` ("transport") and `name` ("tcp").
// Throws DT_ERR_PLUGIN_NOT_FOUND listing every folder searched when no file exists,
// DT_ERR_PLUGIN_LOAD when dlopen fails or the entry point is missing, DT_ERR_PLUGIN_ABI
// when negotiation fails (declined, wrong kind, unsupported version), each naming the
// file and the reason.
std::unique_ptr<LoadedPlugin> load(const std::string &kind, const std::string &name,
                                   const dt_host_services_t *services);

// The names of transport plugins found in the search path, in search order, for "auto".
std::vector<std::string> available(const std::string &kind);

// A transport table upgraded to the current version (v1 tables gain NULL members).
// The returned table lives as long as `plugin`.
const dt_transport_v3_t *transport_ops(const LoadedPlugin &plugin);

// Opens the first transport of `names` that loads, negotiates and initialises: "auto"
// expands to available("transport") with tcp last; duplicates are tried once. A failure
// is logged at warn with its reason and the next name is tried. With one name tried, its
// own error is rethrown unchanged; with several, the error names each transport tried
// and its reason (a name with no file lists the folders searched). The transport opened
// is the context's only one, so one whose capabilities say it cannot carry control
// traffic (a device-only transport) fails like an init failure, DT_ERR_INVALID_CONFIG
// naming it. The returned Transport keeps its plugin loaded for as long as it lives.
std::unique_ptr<Transport> open_transport(const std::vector<std::string> &names,
                                          const dt_transport_init_args_t &args,
                                          const dt_host_services_t *services);

// Opens `name` as the context's device transport, beside the host transport: its native
// collectives take device memory (DT_ERR_INVALID_CONFIG when its capabilities say they
// do not); it need not carry control traffic. Errors as open_transport's for one name;
// the caller names the setting.
std::unique_ptr<Transport> open_device_transport(const std::string &name,
                                                 const dt_transport_init_args_t &args,
                                                 const dt_host_services_t *services);

} // namespace dt::plugin

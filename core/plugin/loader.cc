// SPDX-License-Identifier: Apache-2.0
// Opening a plugin file and negotiating with it (the Vulkan-loader handshake): the core
// offers the ops versions it speaks, the plugin answers with one, and every field of the
// answer is checked before the core trusts it.
#include "plugin/loader.h"
#include "plugin/memory_provider.h"
#include "plugin/plugin_files.h"
#include "plugin/transport_adapter.h"

#include "runtime/error.h"
#include "telemetry/log.h"

#include <disttrain/plugin/compute.h>
#include <disttrain/plugin/memory.h>

#include <dlfcn.h>

#include <utility>

namespace dt::plugin {

namespace {

// What the core speaks, per plugin kind. A new kind (compute) adds a row and a check.
struct KindInfo {
    const char *name;
    uint32_t kind;
    uint32_t min_ops_version;
    uint32_t max_ops_version;
};

constexpr KindInfo kKinds[] = {
    {"transport", DT_PLUGIN_KIND_TRANSPORT, DT_TRANSPORT_VERSION_1, DT_TRANSPORT_VERSION},
    {"compute", DT_PLUGIN_KIND_COMPUTE, DT_COMPUTE_VERSION_1, DT_COMPUTE_VERSION},
    {"memory", DT_PLUGIN_KIND_MEMORY, DT_MEMORY_VERSION_1, DT_MEMORY_VERSION},
};

const KindInfo &kind_info(const std::string &kind)
{
    for (const auto &info : kKinds)
        if (kind == info.name)
            return info;
    throw_error(DT_ERR_INVALID_ARGUMENT, "unknown plugin kind '", kind,
                "'; this libdisttrain loads transport, compute and memory plugins");
}

std::string kind_name(uint32_t kind)
{
    switch (kind) {
    case DT_PLUGIN_KIND_TRANSPORT: return "transport";
    case DT_PLUGIN_KIND_COMPUTE: return "compute";
    case DT_PLUGIN_KIND_MEMORY: return "memory";
    default: return cat("unknown-kind (", kind, ")");
    }
}

// Closes the handle unless released: dlopen succeeded but negotiation may still fail.
struct DlHandle {
    void *handle = nullptr;
    ~DlHandle()
    {
        if (handle != nullptr)
            dlclose(handle);
    }
    void *release() { return std::exchange(handle, nullptr); }
};

// Throws DT_ERR_PLUGIN_ABI when the answer cannot be trusted; `who` names the plugin.
void check_answer(const KindInfo &info, const std::string &who, int32_t rc,
                  const dt_plugin_answer_t &answer)
{
    if (rc == DTP_ERR_UNSUPPORTED)
        throw_error(DT_ERR_PLUGIN_ABI, who, " declined: ",
                    answer.decline_reason != nullptr ? answer.decline_reason
                                                     : "(it gave no reason)");
    if (rc != DTP_OK)
        throw_error(DT_ERR_PLUGIN_ABI, who, " failed negotiation with ",
                    dt_status_string(static_cast<dt_status_t>(rc)),
                    answer.decline_reason != nullptr ? cat(": ", answer.decline_reason)
                                                     : std::string());
    if (answer.kind != info.kind)
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered that it is a ",
                    kind_name(answer.kind), " plugin, not a ", info.name,
                    " plugin; remove or rename the file");
    if (answer.ops_version > info.max_ops_version)
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered ", info.name, " ops version ",
                    answer.ops_version, ", newer than this libdisttrain speaks (",
                    info.min_ops_version, " to ", info.max_ops_version,
                    "); upgrade libdisttrain or install a plugin built for this version");
    if (answer.ops_version < info.min_ops_version)
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered ", info.name, " ops version ",
                    answer.ops_version, ", older than this libdisttrain still adapts (",
                    info.min_ops_version, " to ", info.max_ops_version,
                    "); upgrade the plugin");
    if (answer.name == nullptr || *answer.name == '\0')
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered no name; the plugin is broken");
    if (answer.ops == nullptr)
        throw_error(DT_ERR_PLUGIN_ABI, who, " answered no ops table; the plugin is broken");
    if (info.kind == DT_PLUGIN_KIND_TRANSPORT) {
        std::string why = check_transport_ops(answer.ops_version, answer.ops);
        if (!why.empty())
            throw_error(DT_ERR_PLUGIN_ABI, who, ": ", why, "; the plugin is broken");
    }
    if (info.kind == DT_PLUGIN_KIND_MEMORY) {
        std::string why = check_memory_ops(answer.ops);
        if (!why.empty())
            throw_error(DT_ERR_PLUGIN_ABI, who, ": ", why, "; the plugin is broken");
    }
}

} // namespace

LoadedPlugin::LoadedPlugin(void *handle, std::string path, uint32_t kind,
                           uint32_t ops_version, std::string name, const void *ops)
    : handle_(handle), path_(std::move(path)), kind_(kind), ops_version_(ops_version),
      name_(std::move(name)), ops_(ops)
{
    if (kind_ == DT_PLUGIN_KIND_TRANSPORT && ops_ != nullptr)
        transport_table_ = std::make_unique<dt_transport_v3_t>(
            upgrade_transport_ops(ops_version_, ops_));
}

LoadedPlugin::~LoadedPlugin()
{
    if (handle_ != nullptr)
        dlclose(handle_);
}

std::unique_ptr<LoadedPlugin> load(const std::string &kind, const std::string &name,
                                   const dt_host_services_t *services)
{
    const KindInfo &info = kind_info(kind);
    std::vector<std::string> folders = search_path();
    auto path = find_plugin_file(kind, name, folders);
    if (!path)
        throw_error(DT_ERR_PLUGIN_NOT_FOUND, kind, " plugin '", name,
                    "' not found: looked for ", plugin_file_name(kind, name), " in ",
                    join_folders(folders),
                    "; set DISTTRAIN_PLUGIN_PATH to the folder that holds it or install "
                    "the libdisttrain-", kind, "-", name, " package");
    const std::string who = cat(kind, " plugin '", name, "' (", *path, ")");

    dlerror();
    DlHandle handle{dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL)};
    if (handle.handle == nullptr) {
        const char *why = dlerror();
        throw_error(DT_ERR_PLUGIN_LOAD, who, " cannot be loaded: ",
                    why != nullptr ? why : "dlopen failed",
                    "; check that its dependencies are installed (ldd ", *path, ")");
    }
    dlerror();
    void *entry = dlsym(handle.handle, DT_PLUGIN_ENTRY_NAME);
    if (entry == nullptr)
        throw_error(DT_ERR_PLUGIN_LOAD, who, " has no entry point ", DT_PLUGIN_ENTRY_NAME,
                    ": it is not a libdisttrain plugin, or it was built without "
                    "DT_PLUGIN_EXPORT");

    dt_plugin_offer_t offer{};
    offer.struct_size = sizeof(offer);
    offer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    offer.max_ops_version = info.max_ops_version;
    offer.min_ops_version = info.min_ops_version;
    offer.services = services;
    dt_plugin_answer_t answer{};
    answer.struct_size = sizeof(answer);
    answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    auto negotiate = reinterpret_cast<dt_plugin_negotiate_fn>(entry);
    int32_t rc = negotiate(&offer, &answer);
    check_answer(info, who, rc, answer);

    if (name != answer.name)
        DT_LOG(debug, "plugin", who, " calls itself '", answer.name, "'");
    DT_LOG(debug, "plugin", "loaded ", who, ", ops version ", answer.ops_version);
    return std::make_unique<LoadedPlugin>(handle.release(), *path, answer.kind,
                                          answer.ops_version, answer.name, answer.ops);
}

const dt_transport_v3_t *transport_ops(const LoadedPlugin &plugin)
{
    if (plugin.transport_table_ == nullptr)
        throw_error(DT_ERR_INTERNAL, "plugin '", plugin.name(), "' (", plugin.path(),
                    ") is a ", kind_name(plugin.kind()),
                    " plugin with no transport ops table");
    return plugin.transport_table_.get();
}

} // namespace dt::plugin

// SPDX-License-Identifier: Apache-2.0
// Plugin discovery: the search path and the plugins found in it.
#include "plugin/loader.h"
#include "plugin/plugin_files.h"

#include "runtime/env.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#ifndef DT_PLUGIN_INSTALL_DIR
#define DT_PLUGIN_INSTALL_DIR "/usr/local/lib/disttrain/plugins"
#endif

namespace fs = std::filesystem;

namespace dt::plugin {

namespace {

// Normalised so that "/a/b/" and "/a//b" count as the same folder.
std::string normalise(const std::string &folder)
{
    std::string out = fs::path(folder).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/')
        out.pop_back();
    return out;
}

// The folder of the binary that holds the core: libdisttrain.so, or the program itself
// when the core is linked statically (the internal tests, disttrainrun).
std::optional<std::string> core_folder()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&search_path), &info) == 0 ||
        info.dli_fname == nullptr || *info.dli_fname == '\0')
        return std::nullopt;
    std::error_code ec;
    fs::path file = fs::absolute(info.dli_fname, ec);
    if (ec)
        return std::nullopt;
    return file.parent_path().string();
}

} // namespace

std::string plugin_file_name(const std::string &kind, const std::string &name)
{
    return "libdt-" + kind + "-" + name + ".so";
}

std::string join_folders(const std::vector<std::string> &folders)
{
    std::string out;
    for (const auto &folder : folders)
        out += (out.empty() ? "" : ", ") + folder;
    return out.empty() ? "(no folder)" : out;
}

std::vector<std::string> search_path()
{
    std::vector<std::string> candidates;
    if (auto value = env::get("DISTTRAIN_PLUGIN_PATH"))
        candidates = env::split_list(*value, ':');
    if (auto beside = core_folder()) {
        candidates.push_back(*beside);
        candidates.push_back((fs::path(*beside) / "disttrain" / "plugins").string());
    }
    candidates.push_back(DT_PLUGIN_INSTALL_DIR);

    // Folders that do not exist stay in the list: the not-found message shows the user
    // every place that was looked at, including a mistyped one.
    std::vector<std::string> folders;
    for (const auto &candidate : candidates) {
        std::string folder = normalise(candidate);
        if (std::find(folders.begin(), folders.end(), folder) == folders.end())
            folders.push_back(folder);
    }
    return folders;
}

std::optional<std::string> find_plugin_file(const std::string &kind,
                                            const std::string &name,
                                            const std::vector<std::string> &folders)
{
    std::string file = plugin_file_name(kind, name);
    for (const auto &folder : folders) {
        std::error_code ec;
        fs::path candidate = fs::path(folder) / file;
        if (fs::is_regular_file(candidate, ec))
            return candidate.string();
    }
    return std::nullopt;
}

std::vector<std::string> available(const std::string &kind)
{
    const std::string prefix = "libdt-" + kind + "-";
    const std::string suffix = ".so";
    std::vector<std::string> names;
    for (const auto &folder : search_path()) {
        // Directory order is arbitrary; sort each folder so "auto" is reproducible.
        std::vector<std::string> here;
        std::error_code ec;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            std::string file = it->path().filename().string();
            if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
                file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
                continue;
            std::error_code type_ec;
            if (!it->is_regular_file(type_ec))
                continue;
            here.push_back(file.substr(prefix.size(),
                                       file.size() - prefix.size() - suffix.size()));
        }
        std::sort(here.begin(), here.end());
        for (auto &name : here)
            if (std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(std::move(name));
    }
    return names;
}

} // namespace dt::plugin

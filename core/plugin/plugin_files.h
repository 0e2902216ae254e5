/* SPDX-License-Identifier: Apache-2.0 */
// Where plugin files are and what they are called; shared by the loader and discovery.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dt::plugin {

// "libdt-<kind>-<name>.so".
std::string plugin_file_name(const std::string &kind, const std::string &name);

// The first folder of `folders` that holds the plugin's file, as a path to the file.
std::optional<std::string> find_plugin_file(const std::string &kind,
                                            const std::string &name,
                                            const std::vector<std::string> &folders);

// "/a, /b, /c" for error messages.
std::string join_folders(const std::vector<std::string> &folders);

} // namespace dt::plugin

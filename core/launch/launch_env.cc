// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_env.h"

#include <algorithm>
#include <cstdlib>

namespace dt::launch {
namespace {

std::pair<std::string, std::string> split_entry(const std::string &entry)
{
    size_t eq = entry.find('=');
    if (eq == std::string::npos)
        return {entry, {}};
    return {entry.substr(0, eq), entry.substr(eq + 1)};
}

void set_in(EnvList &env, const std::string &name, const std::string &value)
{
    auto it = std::find_if(env.begin(), env.end(),
                           [&](const auto &kv) { return kv.first == name; });
    if (it != env.end())
        it->second = value;
    else
        env.emplace_back(name, value);
}

} // namespace

bool forwarded_by_default(const std::string &name)
{
    if (is_rank_variable(name))
        return false;
    return name.rfind("DISTTRAIN_", 0) == 0 || name == "OMP_NUM_THREADS" ||
           name.rfind("NCCL_", 0) == 0 || name.rfind("UCX_", 0) == 0;
}

std::vector<std::string> unset_export_warnings(const std::vector<ExportedVar> &exports)
{
    std::vector<std::string> warned, out;
    for (const ExportedVar &v : exports) {
        if (v.value || std::getenv(v.name.c_str()) ||
            std::find(warned.begin(), warned.end(), v.name) != warned.end())
            continue;
        warned.push_back(v.name);
        out.push_back("warning: -x " + v.name + ": " + v.name + " is not set here, so no "
                      "rank gets it (a misspelt name?); -x " + v.name + "=VALUE gives it "
                      "a value");
    }
    return out;
}

EnvList exported_values(const std::vector<ExportedVar> &exports,
                        const std::vector<std::string> &environment)
{
    EnvList out;
    for (const ExportedVar &v : exports) {
        if (v.value) {
            set_in(out, v.name, *v.value);
            continue;
        }
        for (const std::string &entry : environment) {
            auto [name, value] = split_entry(entry);
            if (name == v.name) {
                set_in(out, name, value);
                break;
            }
        }
    }
    return out;
}

EnvList remote_settings(const std::vector<std::string> &environment, const EnvList &exported)
{
    EnvList out;
    for (const std::string &entry : environment) {
        auto [name, value] = split_entry(entry);
        if (forwarded_by_default(name))
            set_in(out, name, value);
    }
    for (const auto &[name, value] : exported)
        set_in(out, name, value);
    return out;
}

void set_variable(std::vector<std::string> &env, const std::string &name,
                  const std::string &value)
{
    std::string prefix = name + "=";
    auto it = std::find_if(env.begin(), env.end(), [&](const std::string &entry) {
        return entry.compare(0, prefix.size(), prefix) == 0;
    });
    if (it != env.end())
        *it = prefix + value;
    else
        env.push_back(prefix + value);
}

} // namespace dt::launch

/* SPDX-License-Identifier: Apache-2.0 */
// Helpers for the plugin tests: scoped environment variables, temporary folders, copies
// of fixture plugins under other names, and host services that record plugin errors.
#pragma once

#include "runtime/error.h"

#include <disttrain/plugin/transport.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace dt::test {

namespace fs = std::filesystem;

// Sets (or unsets, with nullopt) a variable for the scope, restoring it afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char *name, std::optional<std::string> value) : name_(name)
    {
        if (const char *old = std::getenv(name))
            old_ = old;
        if (value)
            setenv(name, value->c_str(), 1);
        else
            unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    const char *name_;
    std::optional<std::string> old_;
};

// A fresh folder under the system temp folder, removed with its contents.
class TempDir {
public:
    TempDir()
    {
        std::string pattern = (fs::temp_directory_path() / "dt-plugin-test-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const fs::path &path() const { return path_; }
    std::string str() const { return path_.string(); }

private:
    fs::path path_;
};

// The folder of the fixture plugins (set by meson for this test).
inline fs::path fixture_dir()
{
    const char *dir = std::getenv("DISTTRAIN_TEST_FIXTURE_DIR");
    if (dir == nullptr)
        throw std::runtime_error("DISTTRAIN_TEST_FIXTURE_DIR is not set; run with meson test");
    return dir;
}

// Copies fixture `fixture` ("fixture_v1") into folder as libdt-transport-<as>.so.
inline fs::path copy_fixture(const std::string &fixture, const fs::path &folder,
                             const std::string &as)
{
    fs::path to = folder / ("libdt-transport-" + as + ".so");
    fs::copy_file(fixture_dir() / ("libdt-transport-" + fixture + ".so"), to,
                  fs::copy_options::overwrite_existing);
    return to;
}

// Runs f, expecting a dt::Error; returns it for the caller to inspect.
template <typename F>
Error expect_error(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    ADD_FAILURE() << "expected a dt::Error, nothing was thrown";
    return Error(DT_OK, "");
}

// Host services like the core's: set_error writes the thread's last error.
inline const dt_host_services_t *test_services()
{
    static const dt_host_services_t services = [] {
        dt_host_services_t s{};
        s.struct_size = sizeof(s);
        s.abi_version = DT_HOST_SERVICES_VERSION;
        s.log = [](void *, int, const char *, const char *) {};
        s.set_error = [](void *, const char *message) { set_last_error(message); };
        return s;
    }();
    return &services;
}

// Init arguments of a single-rank job.
inline dt_transport_init_args_t init_args(int size = 1)
{
    dt_transport_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_TRANSPORT_VERSION;
    args.rank = 0;
    args.size = size;
    args.local_rank = 0;
    args.local_size = size;
    args.timeout_ms = 5000;
    args.services = test_services();
    return args;
}

} // namespace dt::test

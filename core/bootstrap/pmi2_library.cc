// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/pmi2_library.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <dlfcn.h>

namespace dt::bootstrap {

namespace {

const char *dl_reason()
{
    const char *reason = ::dlerror();
    return reason != nullptr ? reason : "unknown reason";
}

template <typename Fn>
void resolve(void *handle, const std::string &path, const char *name, Fn &fn)
{
    ::dlerror(); // clear any earlier error so the one below is this lookup's
    void *sym = ::dlsym(handle, name);
    if (sym == nullptr)
        throw_error(DT_ERR_INVALID_CONFIG, "the PMI2 library ", path, " has no ", name, " (",
                    dl_reason(), "); it is not Slurm's libpmi2: point DISTTRAIN_PMI2_LIBRARY "
                    "at Slurm's libpmi2.so.0 (Debian package libpmi2-0)");
    fn = reinterpret_cast<Fn>(sym);
}

} // namespace

std::string Pmi2Library::default_path()
{
    return env::get("DISTTRAIN_PMI2_LIBRARY").value_or("libpmi2.so.0");
}

Pmi2Library::Pmi2Library(std::string path) : path_(std::move(path))
{
    if (path_.empty())
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_PMI2_LIBRARY is empty; set it to the "
                    "path of Slurm's libpmi2.so.0 or unset it to use the system's");
    void *handle = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
        throw_error(DT_ERR_INVALID_CONFIG, "cannot load Slurm's PMI2 library ", path_, " (",
                    dl_reason(), "); install it (Debian: apt-get install libpmi2-0) or set "
                    "DISTTRAIN_PMI2_LIBRARY to its path");
    // The handle is deliberately never closed (see the header).
    resolve(handle, path_, "PMI2_Init", init);
    resolve(handle, path_, "PMI2_Job_GetId", job_get_id);
    resolve(handle, path_, "PMI2_KVS_Put", kvs_put);
    resolve(handle, path_, "PMI2_KVS_Fence", kvs_fence);
    resolve(handle, path_, "PMI2_KVS_Get", kvs_get);
}

} // namespace dt::bootstrap

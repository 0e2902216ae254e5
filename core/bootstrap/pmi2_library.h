/* SPDX-License-Identifier: Apache-2.0 */
// Slurm's PMI2 client library (libpmi2.so.0, Debian's libpmi2-0), loaded at run time so
// that libdisttrain never depends on Slurm: only a job that needs it (started by srun with
// no store or token given) loads it. The functions are those of slurm/pmi2.h; only the
// few the rendezvous uses are resolved.
#pragma once

#include <string>

namespace dt::bootstrap {

// PMI2_SUCCESS in slurm/pmi2.h.
constexpr int kPmi2Success = 0;
// PMI2_MAX_VALLEN in slurm/pmi2.h: the longest value PMI2_KVS_Get returns.
constexpr int kPmi2MaxValueLength = 1024;

class Pmi2Library {
public:
    // Where the library is looked for: DISTTRAIN_PMI2_LIBRARY (a path or a file name the
    // dynamic linker searches) when set, else "libpmi2.so.0".
    static std::string default_path();

    // dlopen(path, RTLD_NOW | RTLD_LOCAL) and resolves every function below. Throws
    // DT_ERR_INVALID_CONFIG with dlerror()'s reason when the library cannot be loaded or
    // lacks a function. The library is never unloaded: a call that timed out may still be
    // running inside it on another thread.
    explicit Pmi2Library(std::string path);
    Pmi2Library(const Pmi2Library &) = delete;
    Pmi2Library &operator=(const Pmi2Library &) = delete;

    const std::string &path() const { return path_; }

    int (*init)(int *spawned, int *size, int *rank, int *appnum) = nullptr;
    int (*job_get_id)(char jobid[], int jobid_size) = nullptr;
    int (*kvs_put)(const char key[], const char value[]) = nullptr;
    int (*kvs_fence)() = nullptr;
    int (*kvs_get)(const char *jobid, int src_pmi_id, const char key[], char value[],
                   int maxvalue, int *vallen) = nullptr;

private:
    std::string path_;
};

} // namespace dt::bootstrap

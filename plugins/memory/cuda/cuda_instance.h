/* SPDX-License-Identifier: Apache-2.0 */
// One provider instance: the device it serves, the host services it reports through, and
// every stream, event and allocation it handed the core, so finalize can release what the
// core left behind (the ABI makes finalize responsible for them).
#pragma once

#include <disttrain/plugin/memory.h>

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <unordered_set>

namespace cudamem {

struct Instance {
    void *host = nullptr;
    const dt_host_services_t *services = nullptr;
    int device = 0;       // the ordinal init chose
    int device_count = 0; // as cudaGetDeviceCount said at init

    std::mutex mutex; // guards the sets below; never held across a CUDA call that may block
    std::unordered_set<void *> device_blocks;
    std::unordered_set<void *> host_blocks;
    std::unordered_set<void *> streams;
    std::unordered_set<void *> events;
};

inline Instance *self(void *m) { return static_cast<Instance *>(m); }

// Records why through services->set_error ("cuda memory: " + why) and returns status.
// Accepts a NULL services table (a caller that opened the plugin itself).
int32_t fail(const Instance *in, int32_t status, const std::string &why);

// Reports a failed CUDA call by its name and CUDA's own words, and clears the runtime's
// last-error slot so the failure is not blamed later on the user's next CUDA call.
int32_t cuda_fail(const Instance *in, const char *call, cudaError_t rc);

// "cudaErrorNoDevice: no CUDA-capable device is detected".
std::string describe(cudaError_t rc);

// Makes the instance's device current on the calling thread before a runtime call. The
// core calls alloc, stream, copy and event members from its own engine thread, which has
// no device of its own; not restored afterwards, because switching back to the thread's
// default device would create a context on GPU 0 in every process.
int32_t enter(const Instance *in);

// Inserts p into one of the instance's sets; erase_owned says whether it was there.
void add_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p);
bool erase_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p);
bool is_owned(Instance *in, std::unordered_set<void *> Instance::*set, void *p);

} // namespace cudamem

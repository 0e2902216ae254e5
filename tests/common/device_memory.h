/* SPDX-License-Identifier: Apache-2.0 */
// Device memory for test and benchmark programs (dt_conformance --device, grad_bench
// --device): the memory provider that the context uses (DISTTRAIN_MEMORY, found in
// DISTTRAIN_PLUGIN_PATH) opened a second time by the program, as a user's own GPU runtime
// sits in the process. Programs keep inputs and references in host memory and mirror
// them to device buffers around each call.
#pragma once

#include <disttrain/plugin/memory.h>

#include <cstddef>
#include <string>

namespace dt::testing {

class DeviceMemory {
public:
    // Opens libdt-memory-<DISTTRAIN_MEMORY>.so from the folders of DISTTRAIN_PLUGIN_PATH.
    // Throws std::runtime_error naming what is missing.
    DeviceMemory();
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory &) = delete;
    DeviceMemory &operator=(const DeviceMemory &) = delete;

    const std::string &name() const { return name_; }
    void *alloc(size_t bytes) const;
    void free(void *ptr) const;
    // Blocking copies (queued on the default stream, then polled to completion).
    void to_device(void *dst, const void *src, size_t bytes) const;
    void to_host(void *dst, const void *src, size_t bytes) const;
    // A stream of the provider's, as a producer's (a user's GPU work) would be, and a copy
    // queued on it that returns before it runs; src must stay valid until it has.
    void *stream_create() const;
    void stream_destroy(void *stream) const;
    void to_device_async(void *dst, const void *src, size_t bytes, void *stream) const;

private:
    void copy(void *dst, const void *src, size_t bytes, int32_t direction) const;

    std::string name_;
    void *handle_ = nullptr;
    const dt_memory_v1_t *ops_ = nullptr;
    void *m_ = nullptr;
    void *event_ = nullptr;
};

} // namespace dt::testing

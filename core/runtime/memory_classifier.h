/* SPDX-License-Identifier: Apache-2.0 */
// The hook through which a memory provider tells the core where a buffer lives. The core
// never links or loads CUDA (or any accelerator runtime) to look at a pointer: only a
// provider that is already loaded (the cuDNN compute plugin, a CUDA memory plugin) can
// answer, through this interface. The context holds one (the memory provider that
// DISTTRAIN_MEMORY names, core/plugin/memory_provider.h) or none; with none,
// DT_MEMORY_AUTO means host and DT_MEMORY_DEVICE is refused (buffer_memory.h).
#pragma once

#include <disttrain/disttrain.h>

namespace dt {

struct PointerMemory {
    dt_memory_type_t type = DT_MEMORY_HOST; // host or device, never auto
    int device = -1;                        // the device's ordinal when type is device
};

class MemoryClassifier {
public:
    virtual ~MemoryClassifier() = default;

    // The provider's name, for messages ("cudnn").
    virtual const char *provider() const noexcept = 0;

    // Where ptr lives. A pointer the provider does not know is host memory. Must not
    // wait for device work: it runs on the caller's thread inside every collective call.
    // Thread safe. Throws dt::Error when the provider's query fails.
    virtual PointerMemory classify(const void *ptr) const = 0;
};

} // namespace dt

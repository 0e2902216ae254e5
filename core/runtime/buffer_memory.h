/* SPDX-License-Identifier: Apache-2.0 */
// Where a collective's buffers live, from the call's dt_op_params_t and, for
// DT_MEMORY_AUTO, the context's memory classifier (memory_classifier.h). The C API calls
// it before it queues an operation, so a bad field or device memory that nothing can
// move fails the call at once, on the caller's thread, not later in the engine.
#pragma once

#include "runtime/memory_classifier.h"

#include <disttrain/disttrain.h>

#include <initializer_list>
#include <string>

namespace dt {

struct BufferMemory {
    dt_memory_type_t type = DT_MEMORY_HOST; // host or device, never auto
    // The buffers' device: where the provider finds them, else params->device; -1: not
    // known. The copies go by address, so nothing selects a device with it.
    int device = -1;
    void *stream = nullptr;
};

// The operation as messages name it: "dt_allreduce 'grad.w'", or "dt_allreduce" when
// the call has no name.
std::string call_label(const char *fn, const char *name);

// Checks the fields of params (NULL: all defaults) of the call `fn` named `name` (may
// be NULL) without resolving anything: DT_ERR_INVALID_ARGUMENT for an unknown memory
// type or a negative device, naming the field. What a barrier, which moves no buffer,
// does with its params.
void check_op_params(const char *fn, const char *name, const dt_op_params_t *params);

// Resolves params (NULL: all defaults, host memory) for the call `fn` named `name`
// whose buffers are `buffers` (named by `buffer_names`, same order; NULL entries are skipped).
// classifier: the context's, or null when no memory provider is loaded; when there is
// one it is asked about every buffer, whatever params says (but not for NULL params).
// Builds no string unless it throws. Throws DT_ERR_INVALID_ARGUMENT for an unknown memory
// type or a negative device (naming the field), for AUTO buffers that a provider finds in
// different memories, for host or device buffers that it finds in the other memory, and
// for device buffers it finds on two devices or on another than params->device;
// DT_ERR_UNSUPPORTED for device memory while no memory provider is loaded.
BufferMemory resolve_buffer_memory(const char *fn, const char *name,
                                   const dt_op_params_t *params,
                                   std::initializer_list<const void *> buffers,
                                   std::initializer_list<const char *> buffer_names,
                                   const MemoryClassifier *classifier);

} // namespace dt

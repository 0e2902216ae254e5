// SPDX-License-Identifier: Apache-2.0
// libdt-memory-cuda.so: the memory provider for NVIDIA GPUs through the CUDA runtime,
// chosen with DISTTRAIN_MEMORY=cuda (and named by the cuDNN compute plugin). This file
// is only the table and the entry point; the members live in the files cuda_ops.h lists.
#include "cuda_ops.h"

#include <disttrain/plugin/common.h>

namespace cudamem {
namespace {

const dt_memory_v1_t kOps = {
    sizeof(dt_memory_v1_t), DT_MEMORY_VERSION_1, "cuda",
    init, finalize, pointer_query, device_alloc, device_free, host_alloc, host_free,
    stream_create, stream_destroy, copy_async, event_create, event_destroy, event_record,
    event_query, stream_wait_event,
};

} // namespace
} // namespace cudamem

// Touches no CUDA: negotiation must not block, and a machine without a GPU still loads
// the plugin, so init can explain "no GPU" through the core's error instead of a decline.
extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer)
{
    answer->kind = DT_PLUGIN_KIND_MEMORY;
    answer->name = "cuda";
    if (offer->max_ops_version < DT_MEMORY_VERSION_1) {
        answer->decline_reason = "the cuda memory provider speaks only memory ops version 1";
        return DTP_ERR_UNSUPPORTED;
    }
    answer->ops_version = DT_MEMORY_VERSION_1;
    answer->ops = &cudamem::kOps;
    return DTP_OK;
}

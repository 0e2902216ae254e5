/* SPDX-License-Identifier: Apache-2.0 */
// The members of the dt_memory_v1_t table, one file per concern:
// cuda_init.cc (init, finalize), cuda_pointer.cc (pointer_query), cuda_alloc.cc (device
// and pinned host memory), cuda_queue.cc (streams, copies, events).
#pragma once

#include <disttrain/plugin/memory.h>

namespace cudamem {

int32_t init(const dt_memory_init_args_t *args, void **m);
int32_t finalize(void *m);
int32_t pointer_query(void *m, const void *ptr, dt_memory_pointer_info_t *info);
int32_t device_alloc(void *m, int32_t device, size_t bytes, void **ptr);
int32_t device_free(void *m, void *ptr);
int32_t host_alloc(void *m, size_t bytes, void **ptr);
int32_t host_free(void *m, void *ptr);
int32_t stream_create(void *m, int32_t device, void **stream);
int32_t stream_destroy(void *m, void *stream);
int32_t copy_async(void *m, void *dst, const void *src, size_t bytes, int32_t direction,
                   void *stream);
int32_t event_create(void *m, void **event);
int32_t event_destroy(void *m, void *event);
int32_t event_record(void *m, void *event, void *stream);
int32_t event_query(void *m, void *event);
int32_t stream_wait_event(void *m, void *stream, void *event);

} // namespace cudamem

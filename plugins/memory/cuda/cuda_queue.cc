// SPDX-License-Identifier: Apache-2.0
// Streams, asynchronous copies and events: the device work the core queues and then
// polls. Nothing here waits for the device; event_query is cudaEventQuery, which never
// blocks, so a stuck GPU becomes a time-out in the core.
#include "cuda_instance.h"
#include "cuda_ops.h"

#include <string>

namespace cudamem {
namespace {

cudaStream_t as_stream(void *s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void *e) { return static_cast<cudaEvent_t>(e); }

} // namespace

int32_t stream_create(void *m, int32_t device, void **stream)
{
    Instance *in = self(m);
    if (stream == nullptr)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "stream_create: stream is NULL");
    if (device >= in->device_count)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "stream_create: GPU " +
                    std::to_string(device) + " does not exist; this machine has " +
                    std::to_string(in->device_count));
    // A stream belongs to the device current when it is created.
    cudaError_t rc = cudaSetDevice(device < 0 ? in->device : device);
    if (rc != cudaSuccess)
        return cuda_fail(in, "cudaSetDevice", rc);
    // Non-blocking: the core's copies must not serialise with the legacy default stream
    // the user's own work may run on, nor it with them.
    cudaStream_t s = nullptr;
    rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (rc != cudaSuccess)
        return cuda_fail(in, "cudaStreamCreateWithFlags", rc);
    add_owned(in, &Instance::streams, s);
    *stream = s;
    return DTP_OK;
}

int32_t stream_destroy(void *m, void *stream)
{
    Instance *in = self(m);
    if (!erase_owned(in, &Instance::streams, stream))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "stream_destroy of a stream stream_create did not return");
    // Returns at once; CUDA lets queued work finish before releasing the stream.
    cudaError_t rc = cudaStreamDestroy(as_stream(stream));
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaStreamDestroy", rc);
}

int32_t copy_async(void *m, void *dst, const void *src, size_t bytes, int32_t direction,
                   void *stream)
{
    Instance *in = self(m);
    cudaMemcpyKind kind;
    switch (direction) {
    case DTP_MEMORY_COPY_HOST_TO_DEVICE:
        kind = cudaMemcpyHostToDevice;
        break;
    case DTP_MEMORY_COPY_DEVICE_TO_HOST:
        kind = cudaMemcpyDeviceToHost;
        break;
    case DTP_MEMORY_COPY_DEVICE_TO_DEVICE:
        kind = cudaMemcpyDeviceToDevice;
        break;
    default:
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "copy_async: direction " + std::to_string(direction) +
                        " is not a DTP_MEMORY_COPY_* value");
    }
    if (bytes == 0)
        return DTP_OK; // nothing to queue; an event recorded later still orders correctly
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    // stream may be ours, the user's own cudaStream_t, or NULL (the default stream): all
    // are cudaStream_t to the runtime, so no lookup. Unpinned host memory makes CUDA
    // stage the copy, which is still ordered on the stream.
    cudaError_t rc = cudaMemcpyAsync(dst, src, bytes, kind, as_stream(stream));
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaMemcpyAsync", rc);
}

int32_t event_create(void *m, void **event)
{
    Instance *in = self(m);
    if (event == nullptr)
        return fail(in, DTP_ERR_INVALID_ARGUMENT, "event_create: event is NULL");
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    // Without timing an event is cheaper to record and query; the core only polls it.
    cudaEvent_t e = nullptr;
    cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (rc != cudaSuccess)
        return cuda_fail(in, "cudaEventCreateWithFlags", rc);
    add_owned(in, &Instance::events, e);
    *event = e;
    return DTP_OK;
}

int32_t event_destroy(void *m, void *event)
{
    Instance *in = self(m);
    if (!erase_owned(in, &Instance::events, event))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "event_destroy of an event event_create did not return");
    // A pending event may be destroyed: CUDA releases it once it completes.
    cudaError_t rc = cudaEventDestroy(as_event(event));
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaEventDestroy", rc);
}

int32_t event_record(void *m, void *event, void *stream)
{
    Instance *in = self(m);
    if (!is_owned(in, &Instance::events, event))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "event_record of an event event_create did not return");
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    cudaError_t rc = cudaEventRecord(as_event(event), as_stream(stream));
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaEventRecord", rc);
}

int32_t event_query(void *m, void *event)
{
    Instance *in = self(m);
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    cudaError_t rc = cudaEventQuery(as_event(event));
    if (rc == cudaSuccess)
        return DTP_OK;
    if (rc == cudaErrorNotReady)
        return DTP_INPROGRESS; // not an error: the core polls again; nothing to clear
    return cuda_fail(in, "cudaEventQuery", rc); // the device failed the queued work
}

int32_t stream_wait_event(void *m, void *stream, void *event)
{
    Instance *in = self(m);
    if (!is_owned(in, &Instance::events, event))
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    "stream_wait_event of an event event_create did not return");
    int32_t status = enter(in);
    if (status != DTP_OK)
        return status;
    cudaError_t rc = cudaStreamWaitEvent(as_stream(stream), as_event(event), 0);
    return rc == cudaSuccess ? DTP_OK : cuda_fail(in, "cudaStreamWaitEvent", rc);
}

} // namespace cudamem

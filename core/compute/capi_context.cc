// SPDX-License-Identifier: Apache-2.0
// dt_compute_* for the context and memory: create, destroy, query, synchronize, alloc,
// free, memcpy, fill, cast.
#include "compute/handle.h"

#include "runtime/enum_value.h"
#include "runtime/error.h"
#include "telemetry/log.h"

using dt::capi::guard;
using namespace dt::compute;

extern "C" {

DT_API dt_status_t dt_compute_create_versioned(int api_major, int api_minor,
                                               const dt_compute_params_t *params,
                                               dt_compute_h *out)
{
    return guard([&] {
        dt::capi::require_api_version(api_major, api_minor);
        require_ptr("dt_compute_create", "out", out);
        dt::log::init_from_env();
        auto handle = std::make_unique<dt_compute>();
        handle->impl = ComputeContext::open(read_settings(params));
        *out = handle.release();
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_destroy(dt_compute_h compute)
{
    return guard([&] {
        std::unique_ptr<dt_compute> owned(compute);
        if (owned != nullptr && owned->impl->ops().synchronize != nullptr)
            owned->impl->call("dt_compute_destroy", owned->impl->ops().synchronize);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_query(dt_compute_h compute, dt_compute_attr_t *attr)
{
    return guard([&] {
        ComputeContext &c = context(compute, "dt_compute_query");
        require_ptr("dt_compute_query", "attr", attr);
        const dt_compute_info_t &info = c.info();
        const uint64_t mask = attr->field_mask;
        if (mask & DT_COMPUTE_ATTR_FIELD_PLUGIN)
            attr->plugin = c.name().c_str();
        if (mask & DT_COMPUTE_ATTR_FIELD_DEVICE_KIND)
            attr->device_kind = info.device_kind == DTP_DEVICE_GPU ? DT_COMPUTE_DEVICE_GPU
                                                                   : DT_COMPUTE_DEVICE_CPU;
        if (mask & DT_COMPUTE_ATTR_FIELD_DEVICE_NAME)
            attr->device_name = info.device_name != nullptr ? info.device_name : "";
        if (mask & DT_COMPUTE_ATTR_FIELD_THREADS)
            attr->threads = info.threads;
        if (mask & DT_COMPUTE_ATTR_FIELD_COMPUTE_DTYPE)
            attr->compute_dtype = static_cast<dt_dtype_t>(info.compute_dtype);
        if (mask & DT_COMPUTE_ATTR_FIELD_BF16_NATIVE)
            attr->bf16_native = info.bf16_native;
        if (mask & DT_COMPUTE_ATTR_FIELD_STREAM)
            attr->stream = info.stream;
        if (mask & DT_COMPUTE_ATTR_FIELD_MEMORY_PROVIDER)
            attr->memory_provider = info.memory_provider;
        if (mask & DT_COMPUTE_ATTR_FIELD_TF32_CONVOLUTIONS)
            attr->tf32_convolutions = info.tf32_convolutions;
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_synchronize(dt_compute_h compute)
{
    return guard([&] {
        ComputeContext &c = context(compute, "dt_compute_synchronize");
        if (c.ops().synchronize != nullptr)
            c.call("dt_compute_synchronize", c.ops().synchronize);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_alloc(dt_compute_h compute, size_t bytes, void **out)
{
    return guard([&] {
        ComputeContext &c = context(compute, "dt_compute_alloc");
        require_ptr("dt_compute_alloc", "out", out);
        if (bytes == 0 || bytes > (size_t{1} << 60))
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, "dt_compute_alloc: bytes = ", bytes,
                            " must be > 0 (and not a negative number cast to size_t)");
        void *p = nullptr;
        c.call("dt_compute_alloc", c.ops().alloc, bytes, &p);
        *out = p;
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_free(dt_compute_h compute, void *ptr)
{
    return guard([&] {
        ComputeContext &c = context(compute, "dt_compute_free");
        if (ptr != nullptr)
            c.call("dt_compute_free", c.ops().free, ptr);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_memcpy(dt_compute_h compute, void *dst, const void *src,
                                     size_t bytes, dt_copy_kind_t kind)
{
    return guard([&] {
        const char *fn = "dt_compute_memcpy";
        ComputeContext &c = context(compute, fn);
        const int k = dt::enum_value(kind);
        if (k < DT_COPY_HOST_TO_DEVICE || k > DT_COPY_HOST_TO_HOST)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": kind ", k,
                            " is unknown; use a DT_COPY_* value");
        if (bytes == 0)
            return DT_OK;
        require_ptr(fn, "dst", dst);
        require_ptr(fn, "src", src);
        c.call(fn, c.ops().memcpy, dst, src, bytes, static_cast<int32_t>(k));
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_fill(dt_compute_h compute, const dt_tensor_desc_t *desc,
                                   void *x, float value)
{
    return guard([&] {
        const char *fn = "dt_compute_fill";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = fill_tensor(fn, "desc", desc);
        require_ptr(fn, "x", x);
        c.call(fn, c.ops().fill, static_cast<const dtp_tensor_t *>(&t), x, value);
        return DT_OK;
    });
}

DT_API dt_status_t dt_compute_cast(dt_compute_h compute, const dt_tensor_desc_t *src_desc,
                                   const void *src, dt_dtype_t dst_dtype, void *dst)
{
    return guard([&] {
        const char *fn = "dt_compute_cast";
        ComputeContext &c = context(compute, fn);
        dtp_tensor_t t = tensor(fn, "src_desc", src_desc);
        if (dst_dtype != DT_FLOAT32 && dst_dtype != DT_BFLOAT16 && dst_dtype != DT_FLOAT16)
            dt::throw_error(DT_ERR_INVALID_ARGUMENT, fn, ": dst_dtype ",
                            static_cast<int>(dst_dtype), " (", dt_dtype_name(dst_dtype),
                            ") is not float32, bfloat16 or float16");
        require_ptr(fn, "src", src);
        require_ptr(fn, "dst", dst);
        c.call(fn, c.ops().cast, static_cast<const dtp_tensor_t *>(&t), src,
               static_cast<int32_t>(dst_dtype), dst);
        return DT_OK;
    });
}

} // extern "C"

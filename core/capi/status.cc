// SPDX-License-Identifier: Apache-2.0
// Status strings, the last error, versions, dtype and operator names.
#include "capi/guard.h"
#include "runtime/enum_value.h"

#include <cstdint>

static_assert(DTP_OK == DT_OK && DTP_INPROGRESS == DT_INPROGRESS &&
              DTP_ERR_INVALID_ARGUMENT == DT_ERR_INVALID_ARGUMENT &&
              DTP_ERR_INVALID_CONFIG == DT_ERR_INVALID_CONFIG &&
              DTP_ERR_UNSUPPORTED == DT_ERR_UNSUPPORTED &&
              DTP_ERR_NO_MEMORY == DT_ERR_NO_MEMORY &&
              DTP_ERR_TRANSPORT == DT_ERR_TRANSPORT && DTP_ERR_CONNECT == DT_ERR_CONNECT &&
              DTP_ERR_PROTOCOL == DT_ERR_PROTOCOL && DTP_ERR_AUTH == DT_ERR_AUTH &&
              DTP_ERR_STORE == DT_ERR_STORE && DTP_ERR_PEER_LOST == DT_ERR_PEER_LOST &&
              DTP_ERR_ABORTED == DT_ERR_ABORTED && DTP_ERR_TIMEOUT == DT_ERR_TIMEOUT &&
              DTP_ERR_INTERNAL == DT_ERR_INTERNAL,
              "plugin status codes must equal dt_status_t");
static_assert(DTP_FLOAT32 == DT_FLOAT32 && DTP_FLOAT64 == DT_FLOAT64 &&
              DTP_FLOAT16 == DT_FLOAT16 && DTP_BFLOAT16 == DT_BFLOAT16 &&
              DTP_INT8 == DT_INT8 && DTP_UINT8 == DT_UINT8 && DTP_INT32 == DT_INT32 &&
              DTP_INT64 == DT_INT64 && DTP_SUM == DT_SUM && DTP_AVG == DT_AVG &&
              DTP_MIN == DT_MIN && DTP_MAX == DT_MAX && DTP_PROD == DT_PROD,
              "plugin dtype and op values must equal the public ones");

extern "C" {

DT_API const char *dt_status_string(dt_status_t status)
{
    switch (status) {
    case DT_OK: return "DT_OK: success";
    case DT_INPROGRESS: return "DT_INPROGRESS: operation in progress";
    case DT_ERR_INVALID_ARGUMENT: return "DT_ERR_INVALID_ARGUMENT: invalid argument";
    case DT_ERR_INVALID_CONFIG: return "DT_ERR_INVALID_CONFIG: invalid configuration";
    case DT_ERR_VERSION: return "DT_ERR_VERSION: API version mismatch";
    case DT_ERR_UNSUPPORTED: return "DT_ERR_UNSUPPORTED: not supported";
    case DT_ERR_INVALID_STATE: return "DT_ERR_INVALID_STATE: invalid state";
    case DT_ERR_MISMATCH: return "DT_ERR_MISMATCH: ranks disagree";
    case DT_ERR_NO_MEMORY: return "DT_ERR_NO_MEMORY: out of memory";
    case DT_ERR_PLUGIN_NOT_FOUND: return "DT_ERR_PLUGIN_NOT_FOUND: plugin not found";
    case DT_ERR_PLUGIN_LOAD: return "DT_ERR_PLUGIN_LOAD: plugin failed to load";
    case DT_ERR_PLUGIN_ABI: return "DT_ERR_PLUGIN_ABI: plugin ABI negotiation failed";
    case DT_ERR_TRANSPORT: return "DT_ERR_TRANSPORT: transport error";
    case DT_ERR_CONNECT: return "DT_ERR_CONNECT: connection failed";
    case DT_ERR_PROTOCOL: return "DT_ERR_PROTOCOL: malformed message from a peer";
    case DT_ERR_AUTH: return "DT_ERR_AUTH: job token refused";
    case DT_ERR_STORE: return "DT_ERR_STORE: rendezvous store error";
    case DT_ERR_PEER_LOST: return "DT_ERR_PEER_LOST: a peer rank was lost";
    case DT_ERR_ABORTED: return "DT_ERR_ABORTED: the context was aborted";
    case DT_ERR_TIMEOUT: return "DT_ERR_TIMEOUT: operation timed out";
    case DT_ERR_INTERNAL: return "DT_ERR_INTERNAL: internal error";
    }
    return "unknown status";
}

DT_API const char *dt_last_error(void) { return dt::last_error(); }

DT_API dt_status_t dt_get_version(dt_version_t *out)
{
    return dt::capi::guard([&] {
        dt::capi::require(out, "dt_get_version", "out");
        // The project's version from meson.build, as disttrainrun --version prints it.
        *out = dt_version_t{DT_API_MAJOR, DT_API_MINOR, 0, DT_PROJECT_VERSION};
        return DT_OK;
    });
}

DT_API size_t dt_dtype_size(dt_dtype_t dtype)
{
    switch (dtype) {
    case DT_FLOAT32: return 4;
    case DT_FLOAT64: return 8;
    case DT_FLOAT16: return 2;
    case DT_BFLOAT16: return 2;
    case DT_INT8: return 1;
    case DT_UINT8: return 1;
    case DT_INT32: return 4;
    case DT_INT64: return 8;
    default: return 0;
    }
}

DT_API const char *dt_dtype_name(dt_dtype_t dtype)
{
    switch (dtype) {
    case DT_FLOAT32: return "float32";
    case DT_FLOAT64: return "float64";
    case DT_FLOAT16: return "float16";
    case DT_BFLOAT16: return "bfloat16";
    case DT_INT8: return "int8";
    case DT_UINT8: return "uint8";
    case DT_INT32: return "int32";
    case DT_INT64: return "int64";
    default: return "unknown";
    }
}

DT_API const char *dt_reduce_op_name(dt_reduce_op_t op)
{
    switch (op) {
    case DT_SUM: return "sum";
    case DT_AVG: return "avg";
    case DT_MIN: return "min";
    case DT_MAX: return "max";
    case DT_PROD: return "prod";
    default: return "unknown";
    }
}

DT_API const char *dt_memory_type_name(dt_memory_type_t memory_type)
{
    switch (dt::enum_value(memory_type)) {
    case DT_MEMORY_HOST: return "host";
    case DT_MEMORY_DEVICE: return "device";
    case DT_MEMORY_AUTO: return "auto";
    default: return "unknown";
    }
}

} // extern "C"

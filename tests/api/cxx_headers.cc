// SPDX-License-Identifier: Apache-2.0
// Every public header in one C++ translation unit, warnings as errors, and the plugin
// ABI's DTP_* values checked against the C API's enums they must equal.
#include <disttrain/disttrain.h>
#include <disttrain/disttrain.hpp>
#include <disttrain/elastic.hpp>
#include <disttrain/plugin/common.h>
#include <disttrain/plugin/memory.h>
#include <disttrain/plugin/transport.h>

#include <cstdio>

static_assert(DTP_OK == DT_OK && DTP_INPROGRESS == DT_INPROGRESS);
static_assert(DTP_ERR_INVALID_ARGUMENT == DT_ERR_INVALID_ARGUMENT);
static_assert(DTP_ERR_INVALID_CONFIG == DT_ERR_INVALID_CONFIG);
static_assert(DTP_ERR_UNSUPPORTED == DT_ERR_UNSUPPORTED);
static_assert(DTP_ERR_NO_MEMORY == DT_ERR_NO_MEMORY);
static_assert(DTP_ERR_TRANSPORT == DT_ERR_TRANSPORT && DTP_ERR_CONNECT == DT_ERR_CONNECT);
static_assert(DTP_ERR_PROTOCOL == DT_ERR_PROTOCOL && DTP_ERR_AUTH == DT_ERR_AUTH);
static_assert(DTP_ERR_STORE == DT_ERR_STORE && DTP_ERR_PEER_LOST == DT_ERR_PEER_LOST);
static_assert(DTP_ERR_ABORTED == DT_ERR_ABORTED && DTP_ERR_TIMEOUT == DT_ERR_TIMEOUT);
static_assert(DTP_ERR_INTERNAL == DT_ERR_INTERNAL);
static_assert(DTP_MEMORY_HOST == DT_MEMORY_HOST && DTP_MEMORY_DEVICE == DT_MEMORY_DEVICE);
static_assert(DTP_FLOAT32 == DT_FLOAT32 && DTP_FLOAT64 == DT_FLOAT64);
static_assert(DTP_FLOAT16 == DT_FLOAT16 && DTP_BFLOAT16 == DT_BFLOAT16);
static_assert(DTP_INT8 == DT_INT8 && DTP_UINT8 == DT_UINT8);
static_assert(DTP_INT32 == DT_INT32 && DTP_INT64 == DT_INT64);
static_assert(DTP_SUM == DT_SUM && DTP_AVG == DT_AVG && DTP_MIN == DT_MIN);
static_assert(DTP_MAX == DT_MAX && DTP_PROD == DT_PROD);
// Version 2 kept version 1's members in place (the v1 adapter relies on it).
static_assert(offsetof(dt_transport_v2_t, progress) == offsetof(dt_transport_v1_t, progress));
static_assert(offsetof(dt_transport_v2_t, abort) == sizeof(dt_transport_v1_t));
// Version 3 kept version 2's members in place and appended query (the v2 adapter).
static_assert(offsetof(dt_transport_v3_t, barrier) == offsetof(dt_transport_v2_t, barrier));
static_assert(offsetof(dt_transport_v3_t, query) == sizeof(dt_transport_v2_t));
// The capability answer starts with the grow-only header every host/plugin struct has.
static_assert(offsetof(dt_transport_caps_t, struct_size) == 0);
static_assert(offsetof(dt_transport_caps_t, abi_version) == sizeof(uint32_t));
static_assert((DT_TRANSPORT_MEMORY_HOST & DT_TRANSPORT_MEMORY_DEVICE) == 0);

int main()
{
    std::puts("public headers compile as C++ and agree on status and enum values");
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
// What a rank that has joined contributes to a collective it takes part in.
#include "runtime/identity.h"

#include "runtime/error.h"

#include <limits>

namespace dt {

namespace {

template <typename T>
void fill(void *buf, size_t count, T value)
{
    T *p = static_cast<T *>(buf);
    for (size_t i = 0; i < count; ++i)
        p[i] = value;
}

template <typename T>
void fill_typed(void *buf, size_t count, dt_reduce_op_t op)
{
    using L = std::numeric_limits<T>;
    switch (op) {
    case DT_PROD: fill<T>(buf, count, T(1)); return;
    case DT_MIN: fill<T>(buf, count, L::has_infinity ? L::infinity() : L::max()); return;
    case DT_MAX: fill<T>(buf, count, L::has_infinity ? -L::infinity() : L::lowest()); return;
    default: fill<T>(buf, count, T(0)); return;
    }
}

// float16 and bfloat16 bit patterns of 0, 1, +inf and -inf.
void fill_half(void *buf, size_t count, dt_reduce_op_t op, uint16_t one, uint16_t inf)
{
    switch (op) {
    case DT_PROD: fill<uint16_t>(buf, count, one); return;
    case DT_MIN: fill<uint16_t>(buf, count, inf); return;
    case DT_MAX: fill<uint16_t>(buf, count, static_cast<uint16_t>(inf | 0x8000)); return;
    default: fill<uint16_t>(buf, count, 0); return;
    }
}

} // namespace

void fill_identity(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op)
{
    switch (dtype) {
    case DT_FLOAT32: fill_typed<float>(buf, count, op); return;
    case DT_FLOAT64: fill_typed<double>(buf, count, op); return;
    case DT_FLOAT16: fill_half(buf, count, op, 0x3C00, 0x7C00); return;
    case DT_BFLOAT16: fill_half(buf, count, op, 0x3F80, 0x7F80); return;
    case DT_INT8: fill_typed<int8_t>(buf, count, op); return;
    case DT_UINT8: fill_typed<uint8_t>(buf, count, op); return;
    case DT_INT32: fill_typed<int32_t>(buf, count, op); return;
    case DT_INT64: fill_typed<int64_t>(buf, count, op); return;
    default: break;
    }
    throw_error(DT_ERR_INTERNAL, "fill_identity: unknown dtype ", static_cast<int>(dtype));
}

} // namespace dt

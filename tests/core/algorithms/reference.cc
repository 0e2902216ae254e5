// SPDX-License-Identifier: Apache-2.0
#include "reference.h"

#include "reduce/reduce.h"

#include <cstring>
#include <random>
#include <sstream>

namespace dt::test {

const std::vector<dt_dtype_t> kAllDtypes = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_BFLOAT16,
                                            DT_INT8,    DT_UINT8,   DT_INT32,   DT_INT64};
const std::vector<dt_reduce_op_t> kAllOps = {DT_SUM, DT_AVG, DT_MIN, DT_MAX, DT_PROD};

size_t esize(dt_dtype_t dtype)
{
    switch (dtype) {
    case DT_FLOAT64:
    case DT_INT64:
        return 8;
    case DT_FLOAT32:
    case DT_INT32:
        return 4;
    case DT_FLOAT16:
    case DT_BFLOAT16:
        return 2;
    default:
        return 1;
    }
}

namespace {

bool is_float(dt_dtype_t d)
{
    return d == DT_FLOAT32 || d == DT_FLOAT64 || d == DT_FLOAT16 || d == DT_BFLOAT16;
}

// Floats are handled as double (exact for every value the inputs produce); ints as
// int64/uint64 with explicit wrapping to the width of the dtype.
double load_float(dt_dtype_t d, const std::byte *p)
{
    switch (d) {
    case DT_FLOAT32: {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    case DT_FLOAT64: {
        double f;
        std::memcpy(&f, p, 8);
        return f;
    }
    default: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return d == DT_FLOAT16 ? reduce::half_to_float(h) : reduce::bfloat16_to_float(h);
    }
    }
}

void store_float(dt_dtype_t d, std::byte *p, double v)
{
    switch (d) {
    case DT_FLOAT32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        return;
    }
    case DT_FLOAT64:
        std::memcpy(p, &v, 8);
        return;
    default: {
        float f = static_cast<float>(v);
        uint16_t h = d == DT_FLOAT16 ? reduce::float_to_half(f) : reduce::float_to_bfloat16(f);
        std::memcpy(p, &h, 2);
        return;
    }
    }
}

int64_t load_int(dt_dtype_t d, const std::byte *p)
{
    switch (d) {
    case DT_INT8:
        return static_cast<int8_t>(p[0]);
    case DT_UINT8:
        return static_cast<uint8_t>(p[0]);
    case DT_INT32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    default: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    }
}

void store_int(dt_dtype_t d, std::byte *p, uint64_t v)
{
    // Little-endian truncation: the low bytes of v are the wrapped value.
    std::memcpy(p, &v, esize(d));
}

void combine(dt_dtype_t d, dt_reduce_op_t op, std::byte *acc, const std::byte *x)
{
    if (is_float(d)) {
        double a = load_float(d, acc), b = load_float(d, x), r;
        switch (op) {
        case DT_MIN:
            r = a < b ? a : b;
            break;
        case DT_MAX:
            r = a > b ? a : b;
            break;
        case DT_PROD:
            r = a * b;
            break;
        default:
            r = a + b;
        }
        store_float(d, acc, r);
        return;
    }
    int64_t a = load_int(d, acc), b = load_int(d, x);
    uint64_t r;
    switch (op) {
    case DT_MIN:
        r = static_cast<uint64_t>(a < b ? a : b);
        break;
    case DT_MAX:
        r = static_cast<uint64_t>(a > b ? a : b);
        break;
    case DT_PROD:
        r = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
        break;
    default:
        r = static_cast<uint64_t>(a) + static_cast<uint64_t>(b);
    }
    store_int(d, acc, r);
}

void average(dt_dtype_t d, std::byte *p, int n)
{
    if (is_float(d)) {
        // The kernels divide in the dtype's arithmetic type: float for f32/f16/bf16.
        if (d == DT_FLOAT64)
            store_float(d, p, load_float(d, p) / n);
        else
            store_float(d, p, static_cast<float>(load_float(d, p)) / static_cast<float>(n));
        return;
    }
    store_int(d, p, static_cast<uint64_t>(load_int(d, p) / n));
}

} // namespace

Bytes make_input(dt_dtype_t dtype, dt_reduce_op_t op, size_t count, int rank, uint32_t seed)
{
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(rank) * 7919ull + 1);
    const size_t es = esize(dtype);
    Bytes out(count * es);
    for (size_t i = 0; i < count; ++i) {
        std::byte *p = out.data() + i * es;
        if (!is_float(dtype)) {
            store_int(dtype, p, rng());
            continue;
        }
        double v;
        if (op == DT_PROD) {
            static const double kFactors[] = {1.0, -1.0, 2.0, -2.0, 0.5};
            v = kFactors[rng() % 5];
        } else if (op == DT_MIN || op == DT_MAX) {
            v = static_cast<double>(static_cast<int64_t>(rng() % 4001) - 2000) / 8.0;
        } else {
            v = static_cast<double>(static_cast<int64_t>(rng() % 17) - 8);
        }
        store_float(dtype, p, v);
    }
    return out;
}

Bytes reference_reduce(dt_dtype_t dtype, dt_reduce_op_t op, const std::vector<Bytes> &inputs,
                       size_t count)
{
    const size_t es = esize(dtype);
    Bytes acc = inputs.at(0);
    acc.resize(count * es);
    for (size_t r = 1; r < inputs.size(); ++r)
        for (size_t i = 0; i < count; ++i)
            combine(dtype, op, acc.data() + i * es, inputs[r].data() + i * es);
    if (op == DT_AVG)
        for (size_t i = 0; i < count; ++i)
            average(dtype, acc.data() + i * es, static_cast<int>(inputs.size()));
    return acc;
}

std::string compare(dt_dtype_t dtype, const void *got, const void *want, size_t count)
{
    const size_t es = esize(dtype);
    const auto *g = static_cast<const std::byte *>(got);
    const auto *w = static_cast<const std::byte *>(want);
    for (size_t i = 0; i < count; ++i) {
        if (std::memcmp(g + i * es, w + i * es, es) == 0)
            continue;
        std::ostringstream out;
        out << "element " << i << " of " << count << ": got ";
        if (is_float(dtype))
            out << load_float(dtype, g + i * es) << ", want " << load_float(dtype, w + i * es);
        else
            out << load_int(dtype, g + i * es) << ", want " << load_int(dtype, w + i * es);
        return out.str();
    }
    return {};
}

std::string dtype_op_name(dt_dtype_t dtype, dt_reduce_op_t op)
{
    static const char *kDtypes[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64"};
    static const char *kOps[] = {"sum", "avg", "min", "max", "prod"};
    return std::string(kDtypes[dtype]) + "_" + kOps[op];
}

} // namespace dt::test

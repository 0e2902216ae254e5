// SPDX-License-Identifier: Apache-2.0
#include "mpi_types.h"

#include "mpi_error.h"

#include <disttrain/plugin/common.h>

#include <algorithm>
#include <array>
#include <bit>
#include <mutex>

namespace dt::mpi {
namespace {

float bf16_widen(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t bf16_narrow(float f) {
    uint32_t bits = std::bit_cast<uint32_t>(f);
    uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = (bits >> 16) | 0x40u;
    return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// GCC's _Float16 converts with round to nearest even, as the core's F16C path does.
float f16_widen(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }
uint16_t f16_narrow(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

struct Sum { static float apply(float a, float b) { return a + b; } };
struct Prod { static float apply(float a, float b) { return a * b; } };
// Like the core: a NaN on either side wins, so a diverged rank is not hidden.
struct Min {
    static float apply(float a, float b) { return (a != a || b != b) ? a + b : std::min(a, b); }
};
struct Max {
    static float apply(float a, float b) { return (a != a || b != b) ? a + b : std::max(a, b); }
};

// MPI's user-function signature: inout[i] = in[i] (op) inout[i].
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), typename Op>
void half_op(void *in, void *inout, int *len, MPI_Datatype *) {
    auto *a = static_cast<const uint16_t *>(in);
    auto *b = static_cast<uint16_t *>(inout);
    for (int i = 0; i < *len; ++i) b[i] = Narrow(Op::apply(Widen(a[i]), Widen(b[i])));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
std::array<MPI_User_function *, 4> half_functions() {
    return {half_op<Widen, Narrow, Sum>, half_op<Widen, Narrow, Min>,
            half_op<Widen, Narrow, Max>, half_op<Widen, Narrow, Prod>};
}

// Index of sum/min/max/prod in the tables; -1 for avg and unknown values.
int op_index(int32_t op) {
    switch (op) {
    case DTP_SUM: return 0;
    case DTP_MIN: return 1;
    case DTP_MAX: return 2;
    case DTP_PROD: return 3;
    default: return -1;
    }
}

// Process-wide like MPI: created once, after MPI_Init, freed by MPI_Finalize.
struct HalfOps {
    std::once_flag once;
    std::array<MPI_Op, 4> f16{};
    std::array<MPI_Op, 4> bf16{};
};

HalfOps &half_ops() {
    static HalfOps ops;
    std::call_once(ops.once, [] {
        auto f = half_functions<f16_widen, f16_narrow>();
        auto b = half_functions<bf16_widen, bf16_narrow>();
        // Min, max and sum in float then rounded are commutative, so MPI may reorder.
        for (size_t i = 0; i < 4; ++i) {
            check(MPI_Op_create(f[i], 1, &ops.f16[i]), "MPI_Op_create");
            check(MPI_Op_create(b[i], 1, &ops.bf16[i]), "MPI_Op_create");
        }
    });
    return ops;
}

} // namespace

TypeInfo datatype_of(int32_t dtype) {
    switch (dtype) {
    case DTP_FLOAT32: return {MPI_FLOAT, 4};
    case DTP_FLOAT64: return {MPI_DOUBLE, 8};
    case DTP_FLOAT16:
    case DTP_BFLOAT16: return {MPI_UINT16_T, 2};
    case DTP_INT8: return {MPI_INT8_T, 1};
    case DTP_UINT8: return {MPI_UINT8_T, 1};
    case DTP_INT32: return {MPI_INT32_T, 4};
    case DTP_INT64: return {MPI_INT64_T, 8};
    default: return {};
    }
}

MPI_Op op_of(int32_t dtype, int32_t op) {
    int i = op_index(op);
    if (i < 0) return MPI_OP_NULL;
    if (dtype == DTP_FLOAT16) return half_ops().f16[static_cast<size_t>(i)];
    if (dtype == DTP_BFLOAT16) return half_ops().bf16[static_cast<size_t>(i)];
    // Open MPI 4.1's op/avx component adds 8- and 16-bit integers with saturating vector
    // instructions (127 + 100 = 127 for 16 or more int8s, wrapping below that), a choice
    // its maintainers kept (open-mpi/ompi#8045). The core's algorithms wrap, as C does and
    // as the sum of every other transport and dtype does.
    if ((dtype == DTP_INT8 || dtype == DTP_UINT8) && op == DTP_SUM) return MPI_OP_NULL;
    // MPI_MIN and MPI_MAX keep whichever operand a comparison picks ((a < b) ? a : b in
    // Open MPI 4.1, and its AVX min/max), so a NaN survives or vanishes with the order in
    // which the ranks' values meet. The core's kernels propagate it, as every other
    // transport does; its algorithms, over this plugin's point-to-point, run these calls.
    if ((dtype == DTP_FLOAT32 || dtype == DTP_FLOAT64) && (op == DTP_MIN || op == DTP_MAX)) {
        return MPI_OP_NULL;
    }
    static const MPI_Op kBuiltin[4] = {MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD};
    return kBuiltin[i];
}

} // namespace dt::mpi

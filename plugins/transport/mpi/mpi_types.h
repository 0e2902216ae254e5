/* SPDX-License-Identifier: Apache-2.0 */
// The core's dtypes and reduction operators as MPI's. MPI has no float16 or bfloat16, so
// those travel as 16-bit integers and reduce with user operators (widen to float,
// combine, round to nearest even), as the core's own kernels do. DTP_AVG has no MPI
// counterpart: the core reduces with DTP_SUM and divides.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace dt::mpi {

struct TypeInfo {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    size_t size = 0; // bytes per element; 0: not a dtype this plugin knows
};

TypeInfo datatype_of(int32_t dtype);

// MPI_OP_NULL when MPI cannot reduce dtype with op here (avg, an unknown value, a sum of
// 8-bit integers, which Open MPI 4.1's AVX reductions saturate where every other
// transport wraps, or min/max of float32 and float64, whose NaN MPI keeps or drops by the
// order of the operands where every other transport keeps it: the core's algorithm then
// runs it). The user operators are created on first use and live until MPI_Finalize.
MPI_Op op_of(int32_t dtype, int32_t op);

} // namespace dt::mpi

# SPDX-License-Identifier: Apache-2.0
"""Data types and reduction operators of the C API, and their numpy counterparts."""
import enum

import numpy as np

from .errors import usage


class DType(enum.IntEnum):
    """dt_dtype_t."""
    FLOAT32 = 0
    FLOAT64 = 1
    FLOAT16 = 2
    BFLOAT16 = 3
    INT8 = 4
    UINT8 = 5
    INT32 = 6
    INT64 = 7


class ReduceOp(enum.IntEnum):
    """dt_reduce_op_t. AVG divides by the number of ranks (integer division for integers)."""
    SUM = 0
    AVG = 1
    MIN = 2
    MAX = 3
    PROD = 4


# Horovod-style constants: disttrain.Average, disttrain.Sum, ...
Sum = ReduceOp.SUM
Average = ReduceOp.AVG
Min = ReduceOp.MIN
Max = ReduceOp.MAX
Product = ReduceOp.PROD

_OP_NAMES = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "average": ReduceOp.AVG,
             "mean": ReduceOp.AVG, "min": ReduceOp.MIN, "max": ReduceOp.MAX,
             "prod": ReduceOp.PROD, "product": ReduceOp.PROD}


def to_op(op):
    """A ReduceOp from a ReduceOp, its int value or a name ('sum', 'avg', ...)."""
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str):
        found = _OP_NAMES.get(op.lower())
        if found is not None:
            return found
    elif isinstance(op, int) and not isinstance(op, bool):
        try:
            return ReduceOp(op)
        except ValueError:
            pass
    raise usage(f"op={op!r} is not a reduction operator; use one of 'sum', 'avg', 'min', "
                f"'max', 'prod' (or disttrain.Sum, Average, Min, Max, Product)")


class MemoryType(enum.IntEnum):
    """dt_memory_type_t: where a collective's buffers live."""
    HOST = 0
    DEVICE = 1  # needs a memory provider in the library (DISTTRAIN_MEMORY=cuda)
    AUTO = 2    # asks the library's loaded memory providers; host when there are none


def to_memory(memory):
    """A MemoryType from a MemoryType, its int value or a name ('host', 'device', 'auto')."""
    if isinstance(memory, MemoryType):
        return memory
    if isinstance(memory, str):
        found = MemoryType.__members__.get(memory.upper())
        if found is not None:
            return found
    elif isinstance(memory, int) and not isinstance(memory, bool):
        try:
            return MemoryType(memory)
        except ValueError:
            pass
    raise usage(f"memory={memory!r} is not a memory type; use 'host', 'device' or 'auto' "
                f"(or disttrain.MemoryType)")


# numpy dtype -> DType. Native byte order only: the library reduces host-order values.
NUMPY_DTYPES = {
    np.dtype(np.float32): DType.FLOAT32,
    np.dtype(np.float64): DType.FLOAT64,
    np.dtype(np.float16): DType.FLOAT16,
    np.dtype(np.int8): DType.INT8,
    np.dtype(np.uint8): DType.UINT8,
    np.dtype(np.int32): DType.INT32,
    np.dtype(np.int64): DType.INT64,
}

SUPPORTED_NUMPY = ", ".join(str(d) for d in NUMPY_DTYPES) + \
    " (bfloat16 through a torch tensor with disttrain.torch)"


def numpy_dtype(dtype):
    """The DType of a numpy dtype, or a UsageError naming it and the supported ones."""
    found = NUMPY_DTYPES.get(np.dtype(dtype))
    if found is None:
        raise usage(f"dtype {np.dtype(dtype)} is not supported by libdisttrain; supported "
                    f"numpy dtypes: {SUPPORTED_NUMPY}")
    return found

# SPDX-License-Identifier: Apache-2.0
"""A tiny ctypes binding of disttrain/compute.h for the PyTorch comparison tests.

Tensors live in numpy arrays (the oneDNN plugin's memory is host memory), so each call
passes array pointers straight to libdisttrain.so. Errors raise ComputeError with the
status and dt_last_error()'s message.
"""
import ctypes
import os

import numpy as np

FLOAT32, FLOAT16, BFLOAT16, INT32 = 0, 2, 3, 6
POOL_MAX, POOL_AVG_INCLUDE_PADDING, POOL_AVG_EXCLUDE_PADDING = 0, 1, 2


class TensorDesc(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndims", ctypes.c_int32),
                ("dims", ctypes.c_int64 * 4)]


class ComputeParams(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("plugin", ctypes.c_char_p),
                ("device", ctypes.c_int), ("threads", ctypes.c_int),
                ("compute_dtype", ctypes.c_int), ("cache_capacity", ctypes.c_int)]


class ComputeAttr(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("plugin", ctypes.c_char_p),
                ("device_kind", ctypes.c_int), ("device_name", ctypes.c_char_p),
                ("threads", ctypes.c_int), ("compute_dtype", ctypes.c_int),
                ("bf16_native", ctypes.c_int)]


class ConvParams(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("stride", ctypes.c_int32 * 2),
                ("padding", ctypes.c_int32 * 2), ("dilation", ctypes.c_int32 * 2),
                ("groups", ctypes.c_int32), ("layout", ctypes.c_int)]


class PoolParams(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64), ("kind", ctypes.c_int),
                ("kernel", ctypes.c_int32 * 2), ("stride", ctypes.c_int32 * 2),
                ("padding", ctypes.c_int32 * 2), ("layout", ctypes.c_int)]


LAYOUT_NCHW, LAYOUT_NHWC = 0, 1


class SgdParams(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_float), ("momentum", ctypes.c_float),
                ("weight_decay", ctypes.c_float), ("nesterov", ctypes.c_int)]


class AdamParams(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_float), ("beta1", ctypes.c_float),
                ("beta2", ctypes.c_float), ("epsilon", ctypes.c_float),
                ("weight_decay", ctypes.c_float), ("decoupled", ctypes.c_int),
                ("step", ctypes.c_int64)]


class ComputeError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status = status
        self.message = message


def desc(shape, dtype=FLOAT32):
    d = TensorDesc()
    d.dtype = dtype
    d.ndims = len(shape)
    for i, n in enumerate(shape):
        d.dims[i] = n
    return ctypes.byref(d)


def ptr(array):
    if array is None:
        return None
    assert array.flags["C_CONTIGUOUS"], "arrays passed to the compute API must be contiguous"
    return ctypes.c_void_p(array.ctypes.data)


def fptr(array):
    return None if array is None else array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class Compute:
    """A dt_compute_h; `fn(name, *args)` calls dt_compute_<name> and checks the status."""

    def __init__(self, library, **params):
        self.lib = ctypes.CDLL(str(library))
        self.lib.dt_last_error.restype = ctypes.c_char_p
        p = ComputeParams()
        if "plugin" in params:
            p.field_mask |= 1
            p.plugin = params["plugin"].encode()
        if "threads" in params:
            p.field_mask |= 4
            p.threads = params["threads"]
        if "compute_dtype" in params:
            p.field_mask |= 8
            p.compute_dtype = params["compute_dtype"]
        self.handle = ctypes.c_void_p()
        self.check(self.lib.dt_compute_create_versioned(1, 0, ctypes.byref(p),
                                                        ctypes.byref(self.handle)))

    def check(self, status):
        if status != 0:
            raise ComputeError(status, self.lib.dt_last_error().decode())

    def fn(self, name, *args):
        f = getattr(self.lib, "dt_compute_" + name)
        self.check(f(self.handle, *args))

    def query(self):
        a = ComputeAttr()
        a.field_mask = 0x3f
        self.fn("query", ctypes.byref(a))
        return a

    def close(self):
        if self.handle:
            self.check(self.lib.dt_compute_destroy(self.handle))
            self.handle = ctypes.c_void_p()

    # Typed wrappers for the calls whose float arguments ctypes must be told about.
    def matmul(self, ta, tb, a, b, c, alpha=1.0, beta=0.0, dtype=FLOAT32, c_dtype=FLOAT32):
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        self.fn("matmul", dtype, c_dtype, int(ta), int(tb), ctypes.c_int64(m),
                ctypes.c_int64(n), ctypes.c_int64(k), ctypes.c_float(alpha), ptr(a), ptr(b),
                ctypes.c_float(beta), ptr(c))


def library_path():
    build = os.environ.get("DISTTRAIN_BUILD_DIR")
    if not build:
        raise RuntimeError("DISTTRAIN_BUILD_DIR is not set")
    return os.path.join(build, "core", "libdisttrain.so")


def conv_params(stride=1, padding=0, dilation=1, groups=1, layout=None):
    """stride: one for both dims, or (along H, along W)."""
    p = ConvParams()
    p.field_mask = 0xf
    if layout is not None:
        p.field_mask |= 0x10
        p.layout = layout
    p.stride[:] = list(stride) if isinstance(stride, tuple) else [stride, stride]
    p.padding[:] = [padding, padding]
    p.dilation[:] = [dilation, dilation]
    p.groups = groups
    return p


def pool_params(kind, kernel, stride=None, padding=0, layout=None):
    p = PoolParams()
    p.field_mask = 0xf
    if layout is not None:
        p.field_mask |= 0x10
        p.layout = layout
    p.kind = kind
    p.kernel[:] = [kernel, kernel]
    s = stride if stride is not None else kernel
    p.stride[:] = [s, s]
    p.padding[:] = [padding, padding]
    return p

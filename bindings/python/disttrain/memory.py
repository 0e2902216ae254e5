# SPDX-License-Identifier: Apache-2.0
"""The per-call parameters of a collective (dt_op_params_t): where its buffers live.

numpy arrays are host memory, the default. memory='device' (with device=<ordinal> and
stream=<the producer's stream pointer>) is what disttrain.torch passes for CUDA tensors;
the library refuses it with DT_ERR_UNSUPPORTED until a memory provider is loaded.
"""
import ctypes

from . import _lib
from .errors import usage
from .types import to_memory


def op_params(memory=None, device=None, stream=None):
    """An _lib.OpParams for the call, or None (a NULL pointer: host memory, all defaults)
    when nothing was given. Field values are checked by the library, which names them."""
    if memory is None and device is None and stream is None:
        return None
    p = _lib.OpParams()
    if memory is not None:
        p.field_mask |= _lib.OP_PARAM_BITS["memory_type"]
        p.memory_type = int(to_memory(memory))
    if device is not None:
        if isinstance(device, bool) or not isinstance(device, int):
            raise usage(f"device={device!r} is not a device ordinal; pass an int >= 0")
        if not -2**31 <= device < 2**31:
            raise usage(f"device={device} does not fit a C int; pass the device ordinal")
        p.field_mask |= _lib.OP_PARAM_BITS["device"]
        p.device = device
    if stream is not None:
        p.field_mask |= _lib.OP_PARAM_BITS["stream"]
        p.stream = ctypes.c_void_p(int(stream))
    return p


def params_arg(params):
    """What a prototype's dt_op_params_t * argument takes: a pointer, or None (NULL)."""
    return None if params is None else ctypes.byref(params)

# SPDX-License-Identifier: Apache-2.0
"""Collectives on numpy arrays, shared by Context (and by groups once they exist).

Memory rules:
- in-place forms (allreduce_, broadcast_, allreduce with out=) work on the array's own
  memory, so the array must be a C-contiguous, writeable numpy.ndarray of a supported
  dtype; anything else is a UsageError, never a silent copy;
- out-of-place forms (allreduce, allgather, reduce_scatter, alltoall, broadcast) accept any
  array-like and copy it first when it is not C-contiguous (documented cost: one copy).
Every rank must call the same collectives in the same order with the same shapes.

Every collective takes memory= and device= keywords (dt_op_params_t, memory.py). numpy
arrays live in host memory, the default; memory='auto' lets the library ask its loaded
memory providers (host while there are none), and memory='device' is refused by the
library (DT_ERR_UNSUPPORTED) until a memory provider is loaded. Ranks must agree on the
memory type, as on dtype and shape.
"""
import numpy as np

from .errors import usage
from .handle import Handle
from .memory import op_params, params_arg
from .types import numpy_dtype, to_op


def _name(name):
    return None if name is None else str(name).encode("utf-8")


def _dtype_of(array):
    return numpy_dtype(array.dtype)


def inplace_array(array, what="array"):
    """Checks that `array` can be written in place by the library."""
    if not isinstance(array, np.ndarray):
        raise usage(f"{what} must be a numpy.ndarray for an in-place collective, got "
                    f"{type(array).__name__}; use the out-of-place form instead")
    dtype = _dtype_of(array)
    if not array.flags.c_contiguous:
        raise usage(f"{what} is not C-contiguous (shape {array.shape}, strides "
                    f"{array.strides}); an in-place collective writes the array's own "
                    f"memory and will not silently work on a copy: pass "
                    f"np.ascontiguousarray({what}) and use the result, or use the "
                    f"out-of-place form")
    if not array.flags.writeable:
        raise usage(f"{what} is read-only; an in-place collective writes into it")
    return dtype


def input_array(array):
    """A C-contiguous array of a supported dtype for reading (copies if needed)."""
    a = np.asarray(array)
    dtype = _dtype_of(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a, dtype


def _params(memory, device):
    return params_arg(op_params(memory, device))


def _leading_blocks(a, size, what):
    if a.ndim == 0 or a.shape[0] % size != 0:
        raise usage(f"{what} needs an array whose first dimension is a multiple of the "
                    f"number of ranks ({size}); got shape {a.shape}")


class NumpyCollectives:
    """Collective methods; subclasses provide _submit(function, *args) -> request,
    size() and rank()."""

    # -- allreduce --------------------------------------------------------------------
    def allreduce_async(self, array, op="sum", name=None, out=None, *, memory=None,
                        device=None):
        """Starts an allreduce; the handle's wait() returns the result array (`out`, or
        a new array of the same shape and dtype). out=array reduces in place."""
        op = to_op(op)
        if out is not None:
            dtype = inplace_array(out, "out")
            if out is array:
                a = out
            else:
                a, in_dtype = input_array(array)
                if in_dtype != dtype or a.shape != out.shape:
                    raise usage(f"out has dtype {out.dtype} and shape {out.shape} but the "
                                f"input has {a.dtype} and {a.shape}; they must match")
        else:
            a, dtype = input_array(array)
            out = np.empty_like(a)
        req = self._submit("dt_allreduce_async_ex", _name(name), a.ctypes.data,
                           out.ctypes.data, a.size, int(dtype), int(op),
                           _params(memory, device))
        return Handle(self, req, (a, out), result=out, name=name)

    def allreduce(self, array, op="sum", name=None, out=None, *, memory=None, device=None):
        """Reduces `array` across ranks with op and returns the result (a new array
        unless out is given; out=array works in place)."""
        return self.allreduce_async(array, op, name, out, memory=memory,
                                    device=device).wait()

    def allreduce_async_(self, array, op="sum", name=None, *, memory=None, device=None):
        """In-place allreduce_async; wait() returns `array`."""
        inplace_array(array)
        return self.allreduce_async(array, op, name, out=array, memory=memory,
                                    device=device)

    def allreduce_(self, array, op="sum", name=None, *, memory=None, device=None):
        """Reduces `array` in place across ranks and returns it."""
        return self.allreduce_async_(array, op, name, memory=memory, device=device).wait()

    # -- broadcast --------------------------------------------------------------------
    def broadcast_async_(self, array, root=0, name=None, *, memory=None, device=None):
        """Starts copying root's `array` into `array` on every rank."""
        dtype = inplace_array(array)
        self._check_root(root)
        req = self._submit("dt_broadcast_async_ex", _name(name), array.ctypes.data,
                           array.size, int(dtype), int(root), _params(memory, device))
        return Handle(self, req, (array,), result=array, name=name)

    def broadcast_(self, array, root=0, name=None, *, memory=None, device=None):
        """Overwrites `array` with root's `array` on every rank; returns it."""
        return self.broadcast_async_(array, root, name, memory=memory, device=device).wait()

    def broadcast_async(self, array, root=0, name=None, *, memory=None, device=None):
        """Out-of-place broadcast_async: the result is a new array."""
        return self.broadcast_async_(np.array(input_array(array)[0], copy=True), root, name,
                                     memory=memory, device=device)

    def broadcast(self, array, root=0, name=None, *, memory=None, device=None):
        """Returns a copy of root's `array` (on root, a copy of its own)."""
        return self.broadcast_async(array, root, name, memory=memory, device=device).wait()

    def _check_root(self, root):
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or \
                not 0 <= root < self.size():
            raise usage(f"root={root!r} is not a rank of this context; use 0 <= root < "
                        f"{self.size()}")

    # -- allgather --------------------------------------------------------------------
    def allgather_async(self, array, name=None, *, memory=None, device=None):
        """Starts an allgather; wait() returns every rank's array concatenated along
        axis 0, rank 0 first. Every rank must pass the same shape (a 0-d array counts
        as shape (1,))."""
        a, dtype = input_array(array)
        if a.ndim == 0:
            a = a.reshape(1)
        out = np.empty((self.size() * a.shape[0],) + a.shape[1:], dtype=a.dtype)
        req = self._submit("dt_allgather_async_ex", _name(name), a.ctypes.data,
                           out.ctypes.data, a.size, int(dtype), _params(memory, device))
        return Handle(self, req, (a, out), result=out, name=name)

    def allgather(self, array, name=None, *, memory=None, device=None):
        """Every rank's array concatenated along axis 0."""
        return self.allgather_async(array, name, memory=memory, device=device).wait()

    # -- reduce_scatter ---------------------------------------------------------------
    def reduce_scatter_async(self, array, op="sum", name=None, *, memory=None, device=None):
        """Starts a reduce-scatter: `array` (first dimension size() * n) is reduced
        across ranks and rank r gets rows [r*n, (r+1)*n) of the result."""
        op = to_op(op)
        a, dtype = input_array(array)
        _leading_blocks(a, self.size(), "reduce_scatter")
        out = np.empty((a.shape[0] // self.size(),) + a.shape[1:], dtype=a.dtype)
        req = self._submit("dt_reduce_scatter_async_ex", _name(name), a.ctypes.data,
                           out.ctypes.data, out.size, int(dtype), int(op),
                           _params(memory, device))
        return Handle(self, req, (a, out), result=out, name=name)

    def reduce_scatter(self, array, op="sum", name=None, *, memory=None, device=None):
        """This rank's block of the reduced array (see reduce_scatter_async)."""
        return self.reduce_scatter_async(array, op, name, memory=memory,
                                         device=device).wait()

    # -- alltoall ---------------------------------------------------------------------
    def alltoall_async(self, array, name=None, *, memory=None, device=None):
        """Starts an alltoall: block j (rows [j*n, (j+1)*n)) of `array` goes to rank j,
        which stores it as block i, i being the sender. wait() returns the new array."""
        a, dtype = input_array(array)
        _leading_blocks(a, self.size(), "alltoall")
        out = np.empty_like(a)
        req = self._submit("dt_alltoall_async_ex", _name(name), a.ctypes.data,
                           out.ctypes.data, a.size // self.size(), int(dtype),
                           _params(memory, device))
        return Handle(self, req, (a, out), result=out, name=name)

    def alltoall(self, array, name=None, *, memory=None, device=None):
        """The array of blocks received from every rank (see alltoall_async)."""
        return self.alltoall_async(array, name, memory=memory, device=device).wait()

    # -- barrier ----------------------------------------------------------------------
    def barrier_async(self, name=None):
        """Starts a barrier; wait() returns None once every rank has entered it."""
        req = self._submit("dt_barrier_async_ex", _name(name), None)
        return Handle(self, req, (), name=name)

    def barrier(self, name=None):
        """Returns once every rank has called barrier()."""
        self.barrier_async(name).wait()

# SPDX-License-Identifier: Apache-2.0
"""Collectives on numpy arrays, shared by Context (and by groups once they exist).

Memory rules:
- in-place forms (allreduce_, broadcast_, allreduce with out=) work on the array's own
  memory, so the array must be a C-contiguous, writeable numpy.ndarray of a supported
  dtype; anything else is a UsageError, never a silent copy;
- out-of-place forms (allreduce, allgather, reduce_scatter, alltoall, broadcast) accept any
  array-like and copy it first when it is not C-contiguous (documented cost: one copy).
Every rank must call the same collectives in the same order with the same shapes, but
for the first dimension of allgather's array and alltoall's splits, which may differ per
rank (as in Horovod): the sizes, with the shapes (row_shapes.py), are exchanged first,
then an allgatherv or alltoallv (API 1.2) moves the data. Their *_async forms start the
size exchange; the data moves when wait() (or test()) finds it done, so wait such handles
in the order they were started, as every rank does.

allgather and alltoall also take CPU torch tensors (without copying them where they are
contiguous) and then return torch tensors.

Every collective takes memory= and device= keywords (dt_op_params_t, memory.py). numpy
arrays live in host memory, the default; memory='auto' lets the library ask its loaded
memory providers (host while there are none), and memory='device' is refused by the
library (DT_ERR_UNSUPPORTED) until a memory provider is loaded; once one is, a numpy array
passed as memory='device' is refused at the call (UsageError naming the buffer). Ranks
must agree on the memory type, as on dtype and shape.

Reductions average by default (op="avg"), as Horovod and disttrain.torch do; pass
op="sum" for a sum. Integer arrays average with integer division. A broadcast's root is
root_rank= (root= is deprecated: arguments.py).

grouped_allreduce starts one allreduce per array at once so that the engine fuses them;
allgather_object and broadcast_object move pickled objects (objects.py).
"""
import sys

import numpy as np

from .arguments import UNSET, c_string, derived_name, integer, integers, root_rank_of
from .errors import usage
from . import objects, row_shapes
from .handle import GroupHandle, Handle, start_group as _start_group
from .memory import op_params, params_arg
from .types import numpy_dtype, to_op


def _name(name):
    return None if name is None else c_string(str(name), "name")


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


def output_array(out):
    """Checks that the library can write a result into `out` (the out= of a collective,
    whose caller already uses the out-of-place form: the fix is another `out`)."""
    if not isinstance(out, np.ndarray):
        raise usage(f"out must be a numpy.ndarray, got {type(out).__name__}; omit out= to "
                    f"get a new array")
    dtype = _dtype_of(out)
    if not out.flags.c_contiguous:
        raise usage(f"out must be C-contiguous (shape {out.shape}, strides {out.strides}): "
                    f"the result is written straight into its memory; pass a C-contiguous "
                    f"array such as np.empty_like(array), or omit out= to get a new array")
    if not out.flags.writeable:
        raise usage("out is read-only; the result is written into it")
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


def _from_torch(array):
    """(numpy view, True) of a CPU torch tensor, or (array, False) for anything else."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(array, torch.Tensor):
        return array, False
    if array.device.type != "cpu":
        raise usage(f"a {array.device.type} tensor was passed to a numpy collective; use "
                    f"disttrain.torch for device tensors, or pass tensor.cpu()")
    return array.detach().numpy(), True


def _to_torch(result, was_torch):
    if not was_torch:
        return result
    import torch
    return torch.from_numpy(result)


def _sizes_name(name):
    """The name of the size exchange that comes before an uneven collective's data."""
    return None if name is None else derived_name(name, ".sizes")


def _counts(values):
    """A size_t array the C API reads one count per rank from. Keep it in a variable
    while the call runs: `.ctypes.data` of a temporary is freed memory at once."""
    return np.ascontiguousarray(values, dtype=np.uintp)


def _splits(splits, rows, size):
    integers(splits, "splits")
    s = np.asarray(splits)
    if s.ndim != 1 or s.shape[0] != size:
        raise usage(f"splits must hold one integer per rank ({size}); got {splits!r}")
    if not np.issubdtype(s.dtype, np.integer):
        raise usage(f"splits must hold ints, not {s.dtype}; got {splits!r}")
    if (s < 0).any() or int(s.sum()) != rows:
        raise usage(f"splits {s.tolist()} must be >= 0 and sum to the first dimension of "
                    f"the array ({rows})")
    return s.astype(np.int64)


def _leading_blocks(a, size, what):
    if a.ndim == 0 or a.shape[0] % size != 0:
        raise usage(f"{what} needs an array whose first dimension is a multiple of the "
                    f"number of ranks ({size}); got shape {a.shape}")


class NumpyCollectives:
    """Collective methods; subclasses provide _submit(function, *args) -> request,
    size() and rank()."""

    # -- allreduce --------------------------------------------------------------------
    def allreduce_async(self, array, op="avg", name=None, out=None, *, memory=None,
                        device=None):
        """Starts an allreduce; the handle's wait() returns the result array (`out`, or
        a new array of the same shape and dtype). out=array reduces in place."""
        op = to_op(op)
        if out is not None:
            dtype = output_array(out)
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

    def allreduce(self, array, op="avg", name=None, out=None, *, memory=None, device=None):
        """Reduces `array` across ranks with op (average by default) and returns the
        result (a new array unless out is given; out=array works in place)."""
        return self.allreduce_async(array, op, name, out, memory=memory,
                                    device=device).wait()

    def allreduce_async_(self, array, op="avg", name=None, *, memory=None, device=None):
        """In-place allreduce_async; wait() returns `array`."""
        inplace_array(array)
        return self.allreduce_async(array, op, name, out=array, memory=memory,
                                    device=device)

    def allreduce_(self, array, op="avg", name=None, *, memory=None, device=None):
        """Reduces `array` in place across ranks (average by default) and returns it."""
        return self.allreduce_async_(array, op, name, memory=memory, device=device).wait()

    # -- grouped allreduce ------------------------------------------------------------
    def grouped_allreduce_async(self, arrays, op="avg", name=None, *, memory=None,
                                device=None):
        """Starts the allreduce of every array of the list at once, as one group (as
        Horovod's grouped_allreduce): the engine packs ready small allreduces of one
        dtype and operator into its fusion buffer, so the group travels as few
        transfers. wait() returns the list of results, in the order given. Array i is
        named "<name>.<i>" when name is given."""
        handles = _start_group(arrays, name, lambda a, n: self.allreduce_async(
            a, op, n, memory=memory, device=device))
        return GroupHandle(handles)

    def grouped_allreduce(self, arrays, op="avg", name=None, *, memory=None, device=None):
        """The list of allreduces of `arrays` (average by default), reduced as one
        group (see grouped_allreduce_async)."""
        return self.grouped_allreduce_async(arrays, op, name, memory=memory,
                                            device=device).wait()

    # -- broadcast --------------------------------------------------------------------
    def broadcast_async_(self, array, root_rank=UNSET, name=None, *, root=UNSET,
                         memory=None, device=None):
        """Starts copying root_rank's `array` into `array` on every rank (root= is the
        deprecated spelling of root_rank=)."""
        root_rank = root_rank_of(root_rank, root, "broadcast")
        dtype = inplace_array(array)
        self._check_root(root_rank)
        req = self._submit("dt_broadcast_async_ex", _name(name), array.ctypes.data,
                           array.size, int(dtype), int(root_rank), _params(memory, device))
        return Handle(self, req, (array,), result=array, name=name)

    def broadcast_(self, array, root_rank=UNSET, name=None, *, root=UNSET, memory=None,
                   device=None):
        """Overwrites `array` with root_rank's `array` on every rank; returns it."""
        root_rank = root_rank_of(root_rank, root, "broadcast_")
        return self.broadcast_async_(array, root_rank, name, memory=memory,
                                     device=device).wait()

    def broadcast_async(self, array, root_rank=UNSET, name=None, *, root=UNSET,
                        memory=None, device=None):
        """Out-of-place broadcast_async: the result is a new array."""
        root_rank = root_rank_of(root_rank, root, "broadcast_async")
        return self.broadcast_async_(np.array(input_array(array)[0], copy=True), root_rank,
                                     name, memory=memory, device=device)

    def broadcast(self, array, root_rank=UNSET, name=None, *, root=UNSET, memory=None,
                  device=None):
        """Returns a copy of root_rank's `array` (on root_rank, a copy of its own)."""
        root_rank = root_rank_of(root_rank, root, "broadcast")
        return self.broadcast_async(array, root_rank, name, memory=memory,
                                    device=device).wait()

    def _check_root(self, root_rank):
        size = self.size()
        meaning = f" (a rank of this context, 0 <= root_rank < {size})"
        if not 0 <= integer(root_rank, "root_rank", meaning) < size:
            raise usage(f"root_rank={root_rank!r} is not a rank of this context; use 0 <= "
                        f"root_rank < {size}")

    # -- allgather --------------------------------------------------------------------
    def allgather_async(self, array, name=None, *, memory=None, device=None):
        """Starts an allgather; wait() returns every rank's array concatenated along
        axis 0, rank 0 first. The first dimension may differ per rank; the others, and
        the dtype, must agree (a 0-d array counts as shape (1,)). Shapes are exchanged
        first (an allgather of a few int64 per rank, row_shapes.py): ranks whose other
        dimensions disagree all raise DT_ERR_MISMATCH naming the shapes; then an
        allgatherv moves the data when wait() finds the shapes."""
        return self._allgather_rows_async(array, name, memory, device, with_rows=False)

    def allgather(self, array, name=None, *, memory=None, device=None):
        """Every rank's array concatenated along axis 0 (see allgather_async)."""
        return self.allgather_async(array, name, memory=memory, device=device).wait()

    def _allgather_rows_async(self, array, name, memory, device, with_rows):
        """allgather_async; with_rows: wait() returns (gathered, rows per rank)."""
        array, was_torch = _from_torch(array)
        a, dtype = input_array(array)
        if a.ndim == 0:
            a = a.reshape(1)
        mine = row_shapes.record(a.shape)
        records = row_shapes.records_of(self.size())
        req = self._submit("dt_allgather_async_ex", _name(_sizes_name(name)),
                           mine.ctypes.data, records.ctypes.data, mine.size,
                           int(numpy_dtype(records.dtype)), None)  # host memory

        def gather_data(_):
            row_shapes.check_row_shapes(records, row_shapes.call_label("allgather", name))
            rows = row_shapes.rows(records)
            row = int(np.prod(a.shape[1:], dtype=np.int64))
            out = np.empty((int(rows.sum()),) + a.shape[1:], dtype=a.dtype)
            counts = _counts(rows * row)  # held here: the call reads it
            data = self._submit("dt_allgatherv_async_ex", _name(name), a.ctypes.data,
                                out.ctypes.data, a.size, counts.ctypes.data,
                                int(dtype), _params(memory, device))
            out = _to_torch(Handle(self, data, (a, out), result=out, name=name).wait(),
                            was_torch)
            return (out, rows) if with_rows else out

        return Handle(self, req, (a, mine, records), on_complete=gather_data, name=name)

    # -- Python objects -----------------------------------------------------------------
    def allgather_object(self, obj, name=None):
        """Every rank's `obj` in a list, rank 0 first (pickled; each rank's size is
        exchanged first, so the objects may differ in size)."""
        return objects.allgather_object(self, obj, name)

    def broadcast_object(self, obj, root_rank=UNSET, name=None, *, root=UNSET):
        """root_rank's `obj` on every rank (pickled); root_rank returns its own."""
        root_rank = root_rank_of(root_rank, root, "broadcast_object")
        return objects.broadcast_object(self, obj, root_rank, name)

    # -- reduce_scatter ---------------------------------------------------------------
    def reduce_scatter_async(self, array, op="avg", name=None, *, memory=None, device=None):
        """Starts a reduce-scatter: `array` (first dimension size() * n) is reduced
        (averaged by default) across ranks and rank r gets rows [r*n, (r+1)*n) of the result."""
        op = to_op(op)
        a, dtype = input_array(array)
        _leading_blocks(a, self.size(), "reduce_scatter")
        out = np.empty((a.shape[0] // self.size(),) + a.shape[1:], dtype=a.dtype)
        req = self._submit("dt_reduce_scatter_async_ex", _name(name), a.ctypes.data,
                           out.ctypes.data, out.size, int(dtype), int(op),
                           _params(memory, device))
        return Handle(self, req, (a, out), result=out, name=name)

    def reduce_scatter(self, array, op="avg", name=None, *, memory=None, device=None):
        """This rank's block of the reduced array (see reduce_scatter_async)."""
        return self.reduce_scatter_async(array, op, name, memory=memory,
                                         device=device).wait()

    # -- alltoall ---------------------------------------------------------------------
    def alltoall_async(self, array, splits=None, name=None, *, memory=None, device=None):
        """Starts an alltoall along axis 0. Without splits, block j (rows [j*n,
        (j+1)*n)) of `array` goes to rank j, which stores it as block i, i being the
        sender; wait() returns the new array. With splits (one row count per rank,
        summing to the first dimension, as Horovod's), splits[j] rows go to rank j; the
        ranks exchange their splits first, and wait() returns (received array, received
        splits), the rows from rank i being block i."""
        array, was_torch = _from_torch(array)
        a, dtype = input_array(array)
        if splits is None:
            _leading_blocks(a, self.size(), "alltoall")
            out = np.empty_like(a)
            req = self._submit("dt_alltoall_async_ex", _name(name), a.ctypes.data,
                               out.ctypes.data, a.size // self.size(), int(dtype),
                               _params(memory, device))
            return Handle(self, req, (a, out), result=out, name=name,
                          on_complete=lambda r: _to_torch(r, was_torch))
        if a.ndim == 0:
            raise usage("alltoall with splits needs an array of at least one dimension")
        send_splits = _splits(splits, a.shape[0], self.size())
        sent = row_shapes.split_records(a.shape, send_splits)
        records = row_shapes.split_records_of(self.size())
        req = self._submit("dt_alltoall_async_ex", _name(_sizes_name(name)),
                           sent.ctypes.data, records.ctypes.data, row_shapes.SPLIT_WORDS,
                           int(numpy_dtype(records.dtype)), None)  # host memory

        def exchange_data(_):
            row_shapes.check_split_shapes(records, row_shapes.call_label("alltoall", name))
            recv_splits = row_shapes.received_splits(records)
            row = int(np.prod(a.shape[1:], dtype=np.int64))
            out = np.empty((int(recv_splits.sum()),) + a.shape[1:], dtype=a.dtype)
            sendcounts, recvcounts = _counts(send_splits * row), _counts(recv_splits * row)
            data = self._submit("dt_alltoallv_async_ex", _name(name), a.ctypes.data,
                                out.ctypes.data, sendcounts.ctypes.data,
                                recvcounts.ctypes.data, int(dtype), _params(memory, device))
            Handle(self, data, (a, out), name=name).wait()
            return _to_torch(out, was_torch), _to_torch(recv_splits, was_torch)

        return Handle(self, req, (a, sent, records), on_complete=exchange_data, name=name)

    def alltoall(self, array, splits=None, name=None, *, memory=None, device=None):
        """The array of blocks received from every rank, or with splits the tuple
        (received array, received splits) (see alltoall_async)."""
        return self.alltoall_async(array, splits, name, memory=memory,
                                   device=device).wait()

    # -- barrier ----------------------------------------------------------------------
    def barrier_async(self, name=None):
        """Starts a barrier; wait() returns None once every rank has entered it."""
        req = self._submit("dt_barrier_async_ex", _name(name), None)
        return Handle(self, req, (), name=name)

    def barrier(self, name=None):
        """Returns once every rank has called barrier()."""
        self.barrier_async(name).wait()

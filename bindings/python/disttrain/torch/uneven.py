# SPDX-License-Identifier: Apache-2.0
"""allgather with a first dimension that differs per rank, and alltoall with splits, on
torch tensors (as horovod.torch's): the sizes travel first, with the shapes, so ranks
whose other dimensions disagree all fail (disttrain/row_shapes.py), then dt_allgatherv or
dt_alltoallv moves the data.

The sizes are small host arrays; the data stays where the tensor is (CPU, or CUDA with a
memory provider, ordered after torch's current stream like every disttrain.torch call).
The *_async forms start the size exchange; the data moves when wait() (or test()) finds
it done, so wait such handles in the order they were started, as every rank does.
"""
import numpy as np
import torch

from disttrain import row_shapes
from disttrain.arguments import derived_name, integers
from disttrain.errors import usage
from disttrain.handle import Handle
from disttrain.types import DType


def _sizes_name(name):
    return None if name is None else derived_name(name, ".sizes")


def _counts(values):
    """size_t counts, one per rank; kept alive by the caller while the call runs."""
    return np.ascontiguousarray(values, dtype=np.uintp)


def _row(src):
    return int(np.prod(tuple(src.shape[1:]), dtype=np.int64))


def allgather_async(ctx, src, dtype, name, params, to_name, rows_out=None):
    """Every rank's src (dim 0 may differ) concatenated along dim 0, rank 0 first. A list
    rows_out receives every rank's row count (for the gradient)."""
    if src.dim() == 0:
        src = src.reshape(1)
    mine = row_shapes.record(tuple(src.shape))
    records = row_shapes.records_of(ctx.size())
    req = ctx._submit("dt_allgather_async_ex", to_name(_sizes_name(name)),
                      mine.ctypes.data, records.ctypes.data, mine.size, int(DType.INT64),
                      None)

    def gather_data(_):
        row_shapes.check_row_shapes(records, row_shapes.call_label("allgather", name))
        rows = row_shapes.rows(records)
        if rows_out is not None:
            rows_out.extend(int(r) for r in rows)
        out = src.new_empty((int(rows.sum()),) + tuple(src.shape[1:]))
        counts = _counts(rows * _row(src))
        data = ctx._submit("dt_allgatherv_async_ex", to_name(name), src.data_ptr(),
                           out.data_ptr(), src.numel(), counts.ctypes.data, int(dtype),
                           params(src))
        return Handle(ctx, data, (src, out), result=out, name=name).wait()

    return Handle(ctx, req, (src, mine, records), on_complete=gather_data, name=name)


def _splits(splits, rows, size):
    if isinstance(splits, torch.Tensor):
        splits = splits.detach().cpu().numpy()
    integers(splits, "splits")
    s = np.asarray(splits)
    if s.ndim != 1 or s.shape[0] != size:
        raise usage(f"splits must hold one integer per rank ({size}); got {splits!r}")
    if not np.issubdtype(s.dtype, np.integer):
        raise usage(f"splits must hold ints, not {s.dtype}; got {splits!r}")
    if (s < 0).any() or int(s.sum()) != rows:
        raise usage(f"splits {s.tolist()} must be >= 0 and sum to the first dimension of "
                    f"the tensor ({rows})")
    return np.ascontiguousarray(s, dtype=np.int64)


def alltoall_async(ctx, src, splits, dtype, name, params, to_name):
    """splits[j] rows of src go to rank j; wait() returns (received tensor, received
    splits as an int64 CPU tensor), the rows from rank i being block i."""
    if src.dim() == 0:
        raise usage("alltoall with splits needs a tensor of at least one dimension")
    send_splits = _splits(splits, src.shape[0], ctx.size())
    sent = row_shapes.split_records(tuple(src.shape), send_splits)
    records = row_shapes.split_records_of(ctx.size())
    req = ctx._submit("dt_alltoall_async_ex", to_name(_sizes_name(name)), sent.ctypes.data,
                      records.ctypes.data, row_shapes.SPLIT_WORDS, int(DType.INT64), None)

    def exchange_data(_):
        row_shapes.check_split_shapes(records, row_shapes.call_label("alltoall", name))
        recv_splits = row_shapes.received_splits(records)
        row = _row(src)
        out = src.new_empty((int(recv_splits.sum()),) + tuple(src.shape[1:]))
        sendcounts, recvcounts = _counts(send_splits * row), _counts(recv_splits * row)
        data = ctx._submit("dt_alltoallv_async_ex", to_name(name), src.data_ptr(),
                           out.data_ptr(), sendcounts.ctypes.data, recvcounts.ctypes.data,
                           int(dtype), params(src))
        Handle(ctx, data, (src, out), name=name).wait()
        return out, torch.from_numpy(recv_splits)

    return Handle(ctx, req, (src, sent, records), on_complete=exchange_data, name=name)

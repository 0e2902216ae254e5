# SPDX-License-Identifier: Apache-2.0
"""Start-of-training helpers and metric averaging.

Metrics: the classic hang in data-parallel training is a metric reduced a different
number of times on different ranks (one rank logs an extra batch and waits forever).
MetricAverager accumulates locally and reduces once, in compute(), which every rank
calls at the same point (the end of an epoch); allreduce_metric reduces one value now.
"""
import io
import math

import numpy as np
import torch

import disttrain
from disttrain import objects
from disttrain.arguments import UNSET, root_rank_of
from disttrain.errors import usage
from disttrain.process_set import resolve
from disttrain.types import Average, to_op

from . import ops


def _ctx(context, process_set=None):
    ctx = resolve(context, process_set)
    return disttrain.context() if ctx is None else ctx


def broadcast_parameters(params, root_rank=UNSET, context=None, process_set=None, *,
                         root=UNSET):
    """Overwrites params with root_rank's values, in place. params: a state_dict() (or
    any name -> tensor mapping), or (name, tensor) pairs such as
    model.named_parameters(). Names are sorted for a dict, so every rank agrees on the
    order; pairs are broadcast in the order given (the same model gives the same).
    A tensor that is not contiguous (channels_last, transposed) travels through a
    contiguous copy that is written back, so ranks may even hold it in different
    layouts."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = list(params)
        if any(not (isinstance(x, tuple) and len(x) == 2) for x in items):
            raise usage("broadcast_parameters takes a state_dict() or (name, tensor) "
                        "pairs such as model.named_parameters()")
    root_rank = root_rank_of(root_rank, root, "broadcast_parameters")
    ctx = _ctx(context, process_set)
    ctx._check_root(root_rank)  # also where there is nothing to broadcast
    # Every tensor is checked before the first broadcast starts, so a bad one leaves no
    # broadcast half-issued on this rank.
    targets = [_broadcast_target(name, p) for name, p in items if p is not None]
    handles = [ops.broadcast_async_(wire, root_rank, name=f"bcast.{name}", context=ctx)
               for name, wire, _ in targets]
    for h in handles:
        h.wait()
    for _, wire, tensor in targets:
        if wire is not tensor:
            tensor.copy_(wire)


def _broadcast_target(name, p):
    """(name, tensor the broadcast writes, tensor that must end up with its values). A
    contiguous tensor is written in place; any other is copied to a contiguous buffer,
    whose values are copied back after the broadcast: the buffer holds the elements in
    logical order, which is the same on every rank whatever each rank's layout (memory
    order alone would mix up elements between a channels_last and a contiguous copy)."""
    t = p.detach()
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)  # same bytes; the library has no bool
    try:
        ops.tensor_dtype(t)
    except disttrain.UsageError as e:
        raise usage(f"broadcast_parameters: {name!r}: {e.message}") from None
    if t.is_contiguous():
        return name, t, t
    if any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride())):
        raise usage(f"broadcast_parameters: {name!r} (shape {tuple(t.shape)}, strides "
                    f"{t.stride()}) has elements that share memory (an expanded tensor), "
                    f"so it cannot hold root_rank's values; make it a tensor of its own "
                    f"(.clone()) before broadcasting")
    return name, t.contiguous(), t


def broadcast_object(obj, root_rank=UNSET, name=None, context=None, process_set=None, *,
                     root=UNSET):
    """Returns root_rank's `obj` on every rank (serialised with torch.save, so tensors
    keep their storage sharing). An object torch.save cannot serialise fails the call on
    every rank, naming root_rank and the error (disttrain/objects.py)."""
    root_rank = root_rank_of(root_rank, root, "broadcast_object")
    return objects.broadcast_object(_ctx(context, process_set), obj, root_rank,
                                    name or "object", dump=torch.save,
                                    load=lambda data: torch.load(io.BytesIO(data)))


def allgather_object(obj, name=None, context=None, process_set=None):
    """[rank 0's obj, rank 1's obj, ...] on every rank (pickled; the sizes may differ
    and are exchanged first, as in an uneven allgather)."""
    return _ctx(context, process_set).allgather_object(obj, name)


def broadcast_optimizer_state(optimizer, root_rank=UNSET, context=None, process_set=None,
                              *, root=UNSET):
    """Makes every rank's optimizer state (momentum buffers, step counts, learning
    rates) a copy of root_rank's. Works even where other ranks have no state yet."""
    root_rank = root_rank_of(root_rank, root, "broadcast_optimizer_state")
    ctx = _ctx(context, process_set)
    state = broadcast_object(optimizer.state_dict(), root_rank, "optimizer_state", ctx)
    if ctx.rank() != root_rank:
        optimizer.load_state_dict(state)


def allreduce_metric(value, name=None, op=Average, context=None):
    """Reduces one metric across ranks now (average by default). A float (or int) gives
    a float; a tensor gives a tensor of its dtype and shape. Every rank must call it."""
    op = to_op(op)
    name = f"metric.{name}" if name else None
    if isinstance(value, torch.Tensor):
        t = value.detach().to(torch.float64).contiguous().clone()
        return ops.allreduce_(t, op=op, name=name, context=context).to(value.dtype)
    out = _ctx(context).allreduce(np.array([float(value)], np.float64), op=op, name=name)
    return float(out[0])


class MetricAverager:
    """Accumulates a metric locally (update) and averages it over every rank's samples
    with one allreduce (compute), so the number of collectives never depends on how many
    batches a rank saw."""

    def __init__(self, name, context=None):
        self.name = name
        self._context = context
        self.reset()

    def reset(self):
        self._sum = 0.0
        self._count = 0.0

    def update(self, value, n=1):
        """Adds `value` as the mean of n samples (a float or a one-element tensor)."""
        v = value.detach().item() if isinstance(value, torch.Tensor) else float(value)
        self._sum += v * n
        self._count += n

    def compute(self):
        """The mean over every rank's samples (nan if there were none). Collective."""
        total = _ctx(self._context).allreduce(np.array([self._sum, self._count], np.float64),
                                              op="sum", name=f"metric.{self.name}")
        return float(total[0] / total[1]) if total[1] else math.nan

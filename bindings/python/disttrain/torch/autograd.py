# SPDX-License-Identifier: Apache-2.0
"""Gradients through the out-of-place collectives, as horovod.torch's.

A tensor that requires grad, given with grad mode on, gets a result with a grad_fn, so a
loss computed from it trains what fed the collective on every rank (an allgathered
embedding for a contrastive loss, say); a script ported from Horovod would otherwise train
on wrong gradients without a word. Backward runs one blocking collective per call, on the
forward's context or process set and named "<name>.grad" (unnamed when the forward was),
so the ranks match it as they matched the forward:

    allreduce  the allreduce of the gradient with the forward's op (Sum or Average);
               Min, Max and Product have no such gradient and backward raises UsageError
    allgather  the average of the gradient over the ranks, then this rank's rows
    broadcast  the average of the gradient over the ranks on the root, zeros elsewhere
    reduce_scatter  the allgather of the gradient, divided by the ranks for Average: the
               gradient of allreduce(x, op) cut to this rank's block, which it equals
    alltoall   the alltoall of the gradient back to where each block came from (with
               the splits this rank received, when the forward had splits)

allgather and broadcast average as Horovod has since 0.22 (it summed before). Anything
else (no grad wanted, integer tensors) takes the plain path, with no autograd overhead.
"""
import torch

from disttrain.arguments import derived_name
from disttrain.errors import usage
from disttrain.types import Average, Sum, to_op

from . import ops  # ops imports this module too; its functions are looked up at call time


def wanted(tensor):
    """Whether a collective of `tensor` must be recorded for backward."""
    return torch.is_grad_enabled() and isinstance(tensor, torch.Tensor) and \
        tensor.requires_grad


def no_out(out, where):
    # As torch's own out= arguments: the result written into a caller's tensor has no
    # place in the graph, and cutting it off silently would train on wrong gradients.
    if out is not None:
        raise usage(f"{where}: out= does not support autograd, and the input requires "
                    f"grad; omit out= (the result then has a grad_fn), or pass "
                    f"tensor.detach() if no gradient should flow back")


def grad_name(name):
    return None if name is None else derived_name(name, ".grad")


class _Collective(torch.autograd.Function):
    """run() gives the forward's result (the collective, or the result of one already
    waited for); backward(grad) gives the gradient of the input."""

    @staticmethod
    def forward(ctx, tensor, run, backward):
        ctx.backward_fn = backward
        return run()

    @staticmethod
    def backward(ctx, grad):
        return ctx.backward_fn(grad), None, None


# One subclass per collective, so that grad_fn names it (<AllgatherBackward ...>).
class Allreduce(_Collective):
    pass


class Allgather(_Collective):
    pass


class Broadcast(_Collective):
    pass


class ReduceScatter(_Collective):
    pass


class Alltoall(_Collective):
    pass


def on_wait(handle, function, tensor, backward):
    """Records the result of an asynchronous collective when it is waited for. Grad mode
    was on when it started, and that decides, as it does for the blocking form."""
    then = handle._on_complete

    def complete(result):
        if then is not None:
            result = then(result)
        with torch.enable_grad():
            if not isinstance(result, tuple):
                return function.apply(tensor, lambda: result, backward)
            # alltoall with splits: (tensor, received splits); backward sends them back
            out, received = result
            return function.apply(tensor, lambda: out,
                                  lambda grad: backward(grad, received)), received

    handle._on_complete = complete
    return handle


def _linear(op, where):
    """Only the sum and the average have a gradient that is a collective of gradients."""
    if op not in (Sum, Average):
        raise usage(f"{where} with op={op.name} has no gradient: reduce with Sum or "
                    f"Average, or pass tensor.detach() so that none is asked for")


def allreduce_backward(op, name, ctx):
    op = to_op(op)

    def backward(grad):
        _linear(op, "allreduce")
        return ops.allreduce(grad, op, grad_name(name), context=ctx)
    return backward


def allgather_backward(shape, name, ctx, rows):
    """rows: every rank's row count, filled in by the forward (ranks' counts differ)."""

    def backward(grad):
        reduced = ops.allreduce(grad, Average, grad_name(name), context=ctx)
        start = sum(rows[:ctx.rank()])
        return reduced.narrow(0, start, rows[ctx.rank()]).reshape(shape)  # 0-dim: 1 row
    return backward


def broadcast_backward(root_rank, name, ctx):
    def backward(grad):
        reduced = ops.allreduce(grad, Average, grad_name(name), context=ctx)
        return reduced if ctx.rank() == root_rank else torch.zeros_like(reduced)
    return backward


def reduce_scatter_backward(op, name, ctx):
    op = to_op(op)

    def backward(grad):
        _linear(op, "reduce_scatter")
        gathered = ops.allgather(grad, grad_name(name), context=ctx)
        return gathered / ctx.size() if op == Average else gathered
    return backward


def alltoall_backward(name, ctx):
    def backward(grad, received=None):
        if received is None:  # equal blocks: the same exchange undoes itself
            return ops.alltoall(grad, None, grad_name(name), context=ctx)
        return ops.alltoall(grad, received, grad_name(name), context=ctx)[0]
    return backward

# SPDX-License-Identifier: Apache-2.0
"""Gradients through disttrain.torch's out-of-place collectives, checked against the same
computation done in one process with plain torch over every rank's input.

    autograd_job.py          any number of ranks: the whole job
    autograd_job.py sets     4 ranks: also within process sets {0,2} and {1,3}

Rank k's loss differs per rank (loss() below), so a gradient summed where it should be
averaged, or taken from the wrong rows or rank, does not match. Prints "OK" on success.
"""
import sys

import torch

import disttrain.torch as dt

torch.set_num_threads(1)
dt.init()
R, N = dt.rank(), dt.size()


def data(k, rows):
    """Rank k's parameter, built alike by the rank and by the reference."""
    x = torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3) * 0.1 + k
    return x.requires_grad_()


def loss(i, y):
    """The loss of the i-th member: its scale and its nonlinear term differ per member."""
    return ((i + 1) * y ** 2).sum() + (torch.sin(y) * (i - 0.5)).sum()


def every(f):
    """A reference whose result is the same on every member."""
    return lambda xs: [f(xs)] * len(xs)


def splits(i, m):
    """The rows member i of m sends to each member: uneven, and different per sender."""
    return [(i + j) % 3 + 1 for j in range(m)]


def exchanged(xs):
    """alltoall with splits(), in one process: member i gets piece i of every sender."""
    m = len(xs)
    pieces = [torch.split(x, splits(s, m)) for s, x in enumerate(xs)]
    return [torch.cat([pieces[s][i] for s in range(m)]) for i in range(m)]


def blocks(xs, op):
    """reduce_scatter in one process: member i gets block i of the reduction."""
    return list(torch.chunk(op(torch.stack(xs), 0), len(xs)))


def mean(losses):
    return sum(losses) / len(losses)


# name: (rows of member i of m, the collective on this rank, the same in one process over
# every member's input giving each member's result, how the members' losses combine in
# the reference). Horovod's gradients are those of the sum of the losses, except
# allgather's and broadcast's, averaged over the ranks: those of their mean
# (disttrain/torch/autograd.py).
CASES = {
    "allreduce avg": (lambda i, m: 2, lambda x, kw, i, m: dt.allreduce(x, name="ar", **kw),
                      every(lambda xs: torch.stack(xs).mean(0)), sum),
    "allreduce sum": (lambda i, m: 2, lambda x, kw, i, m: dt.allreduce(x, dt.Sum, "s", **kw),
                      every(lambda xs: torch.stack(xs).sum(0)), sum),
    "allreduce_async": (lambda i, m: 3, lambda x, kw, i, m: dt.allreduce_async(
        x, **kw).wait(), every(lambda xs: torch.stack(xs).mean(0)), sum),
    "grouped_allreduce": (lambda i, m: 1, lambda x, kw, i, m: dt.grouped_allreduce(
        [x, 2 * x], dt.Sum, "gar", **kw)[1], every(lambda xs: 2 * torch.stack(xs).sum(0)),
        sum),
    "allgather uneven": (lambda i, m: i + 1, lambda x, kw, i, m: dt.allgather(
        x, "ag", **kw), every(torch.cat), mean),
    "allgather_async": (lambda i, m: 2, lambda x, kw, i, m: dt.allgather_async(
        x, **kw).wait(), every(torch.cat), mean),
    "broadcast root 1": (lambda i, m: 2, lambda x, kw, i, m: dt.broadcast(
        x, 1, "bc", **kw), every(lambda xs: xs[1]), mean),
    "broadcast_async root 0": (lambda i, m: 2, lambda x, kw, i, m: dt.broadcast_async(
        x, 0, **kw).wait(), every(lambda xs: xs[0]), mean),
    "reduce_scatter avg": (lambda i, m: 2 * m, lambda x, kw, i, m: dt.reduce_scatter(
        x, name="rs", **kw), lambda xs: blocks(xs, torch.mean), sum),
    "reduce_scatter_async sum": (lambda i, m: m, lambda x, kw, i, m: dt.reduce_scatter_async(
        x, dt.Sum, **kw).wait(), lambda xs: blocks(xs, torch.sum), sum),
    "alltoall": (lambda i, m: 2 * m, lambda x, kw, i, m: dt.alltoall(x, name="a2a", **kw),
                 lambda xs: [torch.cat([torch.chunk(x, len(xs))[i] for x in xs])
                             for i in range(len(xs))], sum),
    "alltoall splits": (lambda i, m: sum(splits(i, m)), lambda x, kw, i, m: dt.alltoall(
        x, splits(i, m), "a2s", **kw)[0], exchanged, sum),
}


def check(case, members, kw):
    rows, collective, reference, combine = CASES[case]
    i, m = members.index(R), len(members)
    w = data(R, rows(i, m))
    y = collective(1.5 * w, kw, i, m)  # through an operation: the chain rule goes on
    assert y.requires_grad and y.grad_fn is not None, (case, y)
    loss(i, y).backward()

    xs = [data(k, rows(j, m)) for j, k in enumerate(members)]
    want_y = reference([1.5 * x for x in xs])
    total = combine([loss(j, want_y[j]) for j in range(m)])
    want = torch.autograd.grad(total, xs, allow_unused=True)[i]
    want = torch.zeros_like(xs[i]) if want is None else want
    assert torch.allclose(y, want_y[i], rtol=1e-12, atol=1e-12), (case, y, want_y[i])
    assert torch.allclose(w.grad, want, rtol=1e-9, atol=1e-12), (case, members, w.grad, want)
    print(f"{case} on {members}: grad ok", flush=True)


def main():
    world = list(range(N))
    for case in CASES:
        check(case, world, {})
    if sys.argv[1:] == ["sets"]:
        assert N == 4, N
        even, odd = dt.add_process_set([0, 2]), dt.add_process_set([1, 3])
        mine = even if R % 2 == 0 else odd
        for case in CASES:
            check(case, list(mine.ranks), {"process_set": mine})
        dt.barrier()  # a rank keeps its context until the other set is done too
    dt.shutdown()
    print("OK", flush=True)


main()

# SPDX-License-Identifier: Apache-2.0
"""Gradients through disttrain.torch's allreduce, allgather and broadcast, checked against
the same computation done in one process with plain torch over every rank's input.

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


def mean(losses):
    return sum(losses) / len(losses)


# name: (rows of rank k, the collective on this rank, the same in one process over every
# member's input, how the members' losses combine in the reference). Horovod's gradients:
# allreduce's is that of the sum of the losses; allgather's and broadcast's, averaged
# over the ranks, that of their mean (disttrain/torch/autograd.py).
CASES = {
    "allreduce avg": (lambda k: 2, lambda x, kw: dt.allreduce(x, name="ar", **kw),
                      lambda xs: torch.stack(xs).mean(0), sum),
    "allreduce sum": (lambda k: 2, lambda x, kw: dt.allreduce(x, dt.Sum, "ars", **kw),
                      lambda xs: torch.stack(xs).sum(0), sum),
    "allreduce_async": (lambda k: 3, lambda x, kw: dt.allreduce_async(x, **kw).wait(),
                        lambda xs: torch.stack(xs).mean(0), sum),
    "grouped_allreduce": (lambda k: 1, lambda x, kw: dt.grouped_allreduce(
        [x, 2 * x], dt.Sum, "gar", **kw)[1], lambda xs: 2 * torch.stack(xs).sum(0), sum),
    "allgather uneven": (lambda k: k + 1, lambda x, kw: dt.allgather(x, "ag", **kw),
                         torch.cat, mean),
    "allgather_async": (lambda k: 2, lambda x, kw: dt.allgather_async(x, **kw).wait(),
                        torch.cat, mean),
    "broadcast root 1": (lambda k: 2, lambda x, kw: dt.broadcast(x, 1, "bc", **kw),
                         lambda xs: xs[1], mean),
    "broadcast_async root 0": (lambda k: 2, lambda x, kw: dt.broadcast_async(
        x, 0, **kw).wait(), lambda xs: xs[0], mean),
}


def check(case, members, kw):
    rows, collective, reference, combine = CASES[case]
    i = members.index(R)
    w = data(R, rows(R))
    y = collective(1.5 * w, kw)  # through an operation, so the chain rule is exercised
    assert y.requires_grad and y.grad_fn is not None, (case, y)
    loss(i, y).backward()

    xs = [data(k, rows(k)) for k in members]
    want_y = reference([1.5 * x for x in xs])
    total = combine([loss(j, want_y) for j in range(len(members))])
    want = torch.autograd.grad(total, xs, allow_unused=True)[i]
    want = torch.zeros_like(xs[i]) if want is None else want
    assert torch.allclose(y, want_y, rtol=1e-12, atol=1e-12), (case, y, want_y)
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

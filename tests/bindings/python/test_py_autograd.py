# SPDX-License-Identifier: Apache-2.0
"""Gradients through disttrain.torch's out-of-place collectives (as horovod.torch's): 2-
and 4-rank jobs (jobs/autograd_job.py) compare every rank's gradient
with the same computation in one process, and one-process checks of the rules."""
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

import dtpy  # noqa: E402

dtpy.use_build_tree()
import disttrain  # noqa: E402
import disttrain.torch as dt  # noqa: E402

torch.set_num_threads(1)
CASES = 12  # the cases of autograd_job.py


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_gradients_on_two_ranks_match_one_process(ordered):
    r = dtpy.run_job("autograd_job.py", np=2, timeout=120,
                     env={"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "30"})
    dtpy.assert_ranks_ok(r, np=2)
    assert r.stdout.count("grad ok") == 2 * CASES, r.stdout
    assert "[1] allgather uneven on [0, 1]: grad ok" in r.stdout, r.stdout


def test_gradients_within_process_sets_match_one_process():
    r = dtpy.run_job("autograd_job.py", "sets", np=4, timeout=120,
                     env={"DISTTRAIN_TIMEOUT": "30"})
    dtpy.assert_ranks_ok(r, np=4)
    assert r.stdout.count("grad ok") == 4 * 2 * CASES, r.stdout
    assert "[3] broadcast root 1 on [1, 3]: grad ok" in r.stdout, r.stdout


@pytest.fixture(scope="module")
def ctx():
    c = dt.init()
    yield c
    dt.shutdown()


def test_one_rank_gradients_are_those_of_the_identity(ctx):
    w = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64, requires_grad=True)
    ys = [dt.allreduce(w), dt.allreduce(w, op=dt.Sum, name="s"), dt.allgather(w),
          dt.broadcast(w, root_rank=0), dt.allreduce_async(w).wait(),
          dt.allgather_async(w, name="ga").wait(), dt.broadcast_async(w, 0).wait(),
          dt.reduce_scatter(w), dt.reduce_scatter_async(w, dt.Sum).wait(), dt.alltoall(w),
          dt.alltoall(w, splits=[2])[0]]
    for k, y in enumerate(ys):
        assert y.requires_grad and torch.equal(y, w), (k, y)
        (g,) = torch.autograd.grad((y ** 3).sum(), w)
        assert torch.allclose(g, 3 * w.detach() ** 2), (k, g)
    assert type(ys[2].grad_fn).__name__ == "AllgatherBackward"
    assert type(ys[-1].grad_fn).__name__ == "AlltoallBackward"
    got, received = dt.alltoall(w, splits=[2])
    assert received.tolist() == [2] and not received.requires_grad
    s = torch.tensor(2.0, requires_grad=True)  # 0-dim: allgather gives one row per rank
    (g,) = torch.autograd.grad((dt.allgather(s) * 5).sum(), s)
    assert g.shape == () and g.item() == 5


def test_no_grad_wanted_takes_the_plain_path(ctx):
    w = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        assert dt.allreduce(w).grad_fn is None and not dt.allgather(w).requires_grad
    assert dt.broadcast(w.detach(), 0).grad_fn is None
    assert dt.allreduce(torch.arange(3), op=dt.Sum).grad_fn is None  # integers
    h = dt.allreduce_async(w)
    with torch.no_grad():  # grad mode when the call starts decides, as for the blocking form
        assert h.wait().requires_grad
    assert dt.allreduce_(w.detach()).grad_fn is None  # in-place forms stay outside autograd


@pytest.mark.parametrize("collective", [dt.allreduce, dt.reduce_scatter])
def test_min_max_product_have_no_gradient(ctx, collective):
    w = torch.ones(2, requires_grad=True)
    y = collective(w, op=dt.Max)  # the forward works (a metric, say)
    assert torch.equal(y, w)
    with pytest.raises(disttrain.UsageError, match="op=MAX has no gradient.*Sum or Average"):
        y.sum().backward()


def test_out_is_refused_where_a_gradient_is_wanted(ctx):
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(disttrain.UsageError, match="out= does not support autograd"):
        dt.allreduce(w, out=torch.empty(2))
    out = torch.empty(2)
    assert dt.allreduce(w.detach(), out=out) is out

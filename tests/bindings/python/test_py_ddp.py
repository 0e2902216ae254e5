# SPDX-License-Identifier: Apache-2.0
"""disttrain.torch.DistributedDataParallel and SyncBatchNorm: 2-rank jobs checked against
one process on the whole batch (jobs/ddp_job.py, jobs/sync_batch_norm_job.py), and the
wrapper's behaviour in one process."""
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

import dtpy  # noqa: E402

dtpy.use_build_tree()
import disttrain  # noqa: E402
import disttrain.torch as dt  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def ctx():
    c = dt.init()
    yield c
    dt.shutdown()


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_ddp_on_two_ranks_equals_one_process_on_the_whole_batch(ordered):
    job = dtpy.run_job("ddp_job.py", np=2, env={"DISTTRAIN_ORDERED": ordered}, timeout=120)
    dtpy.assert_ranks_ok(job, np=2)


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_sync_batch_norm_on_two_ranks_equals_batch_norm_on_the_whole_batch(ordered):
    job = dtpy.run_job("sync_batch_norm_job.py", np=2, env={"DISTTRAIN_ORDERED": ordered},
                       timeout=90)
    dtpy.assert_ranks_ok(job, np=2)


def test_ddp_in_one_process_trains_like_the_module(ctx):
    torch.manual_seed(0)
    plain = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    wrapped = dt.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)),
        bucket_bytes=0)
    wrapped.module.load_state_dict(plain.state_dict())
    x = torch.randn(8, 4)
    for model in (plain, wrapped):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            model(x).pow(2).mean().backward()
            opt.step()
    for a, b in zip(plain.parameters(), wrapped.module.parameters()):
        assert torch.allclose(a, b)
    # After a synchronised backward every gradient is a view of its bucket.
    buckets = {b.flat.data_ptr() for b in wrapped._buckets}
    assert len(buckets) == 4
    assert all(p.grad._base is not None and p.grad._base.data_ptr() in buckets
               for p in wrapped.parameters())


def test_ddp_no_sync_and_eval_issue_no_collective(ctx, monkeypatch):
    model = dt.DistributedDataParallel(torch.nn.Linear(3, 2))
    calls = []
    for name in ("allreduce_", "allreduce_async_"):  # the last bucket's, the others'
        real = getattr(dt.ops, name)
        monkeypatch.setattr(dt.ops, name,
                            lambda *a, real=real, **k: calls.append(a) or real(*a, **k))
    with model.no_sync():
        model(torch.ones(2, 3)).sum().backward()
    with torch.no_grad():
        model(torch.ones(2, 3))
    assert calls == [] and not model._started
    assert torch.equal(model.module.bias.grad, torch.full((2,), 2.0))
    model(torch.ones(2, 3)).sum().backward()   # accumulates onto the no_sync gradient
    assert len(calls) == 1
    assert torch.equal(model.module.bias.grad, torch.full((2,), 4.0))


def test_ddp_bad_arguments(ctx):
    with pytest.raises(disttrain.UsageError, match="torch.nn.Module"):
        dt.DistributedDataParallel(torch.ones(3))
    with pytest.raises(disttrain.UsageError, match="bucket_bytes"):
        dt.DistributedDataParallel(torch.nn.Linear(2, 2), bucket_bytes=-1)
    with pytest.raises(disttrain.UsageError, match="process_set must be"):
        dt.DistributedDataParallel(torch.nn.Linear(2, 2), process_set=[0])
    with pytest.raises(disttrain.UsageError, match="module's parameters are on cpu"):
        dt.DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(disttrain.UsageError, match="one process drives one device"):
        dt.DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=[0, 1])
    # torch DDP's arguments that ported scripts pass are accepted.
    dt.DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=["cpu"],
                               output_device="cpu", find_unused_parameters=True)


def test_sync_batch_norm_in_one_process_is_batch_norm(ctx):
    torch.manual_seed(3)
    plain = torch.nn.BatchNorm2d(3)
    sync = dt.SyncBatchNorm.convert_sync_batchnorm(torch.nn.BatchNorm2d(3))
    x = torch.randn(4, 3, 2, 2)
    assert torch.allclose(sync(x), plain(x), atol=1e-6)
    assert torch.allclose(sync.running_var, plain.running_var)
    with pytest.raises(disttrain.UsageError, match="channels"):
        sync(torch.randn(4, 5, 2))
    with pytest.raises(disttrain.UsageError, match=r"\(N, C, ...\)"):
        sync(torch.randn(4))


def test_ddp_buckets_start_during_backward(ctx, monkeypatch):
    # One bucket per parameter: all but the last start from the hooks, before the
    # end-of-backward callback, so their reduction overlaps the rest of backward.
    model = dt.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4),
                            torch.nn.Tanh(), torch.nn.Linear(4, 1)), bucket_bytes=0)
    assert len(model._buckets) == 6
    started, at_finish = [], []
    real_start, real_finish = dt.ddp.Bucket.start, model._finish
    monkeypatch.setattr(dt.ddp.Bucket, "start",
                        lambda self, *a: started.append(self.name) or real_start(self, *a))
    monkeypatch.setattr(model, "_finish", lambda: at_finish.append(list(started))
                        or real_finish())
    for _ in range(2):
        model(torch.ones(2, 3)).sum().backward()
        # Reverse registration order: the last layer's bias first.
        assert at_finish[-1] == [b.name for b in model._buckets[:5]], at_finish
        assert at_finish[-1][0].endswith(".grad.4.bias+1")
        started.clear()

# SPDX-License-Identifier: Apache-2.0
"""disttrain.torch: tensor collectives and bad input in one process, a 2-rank job of
every helper, and DistributedOptimizer against single-process training."""
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

import pathlib  # noqa: E402

import dtpy  # noqa: E402

dtpy.use_build_tree()
import disttrain  # noqa: E402
import disttrain.torch as dt  # noqa: E402

torch.set_num_threads(1)
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")


@pytest.fixture(scope="module")
def ctx():
    c = dt.init()
    yield c
    dt.shutdown()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16, torch.int8, torch.uint8, torch.int32,
                                   torch.int64])
def test_collectives_share_the_tensor_memory(ctx, dtype):
    t = torch.arange(12).reshape(3, 4).to(dtype)
    ptr = t.data_ptr()
    assert dt.allreduce_(t, op=dt.Sum) is t and t.data_ptr() == ptr
    assert dt.broadcast_(t, root_rank=0) is t and t.data_ptr() == ptr
    out = dt.allreduce(t, op=dt.Max)
    assert out.data_ptr() != ptr and out.dtype == dtype and torch.equal(out, t)
    assert torch.equal(dt.allgather(t), t)
    assert torch.equal(dt.allreduce_async(t, op=dt.Min).wait(), t)


def test_average_is_the_default_op_and_out_works(ctx):
    t = torch.tensor([1.0, 3.0])
    assert torch.equal(dt.allreduce(t), t)
    out = torch.empty(2)
    assert dt.allreduce(t, out=out) is out and torch.equal(out, t)
    assert torch.equal(dt.reduce_scatter(t.reshape(2, 1)), t.reshape(2, 1))
    assert torch.equal(dt.alltoall(t), t)


def test_requires_grad_parameters_are_written_in_place(ctx):
    p = torch.nn.Parameter(torch.ones(3))
    dt.broadcast_(p.data, 0)
    dt.broadcast_parameters([("p", p)], root_rank=0)
    assert torch.equal(p.detach(), torch.ones(3))


def test_broadcast_parameters_keeps_any_dense_layout_and_names_a_bad_tensor(ctx):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).to(
        memory_format=torch.channels_last)
    w = torch.nn.Parameter(torch.randn(4, 3).t())
    want = {k: v.clone() for k, v in model.state_dict().items()}
    dt.broadcast_parameters(model.state_dict(), root_rank=0)
    dt.broadcast_parameters([("w", w)], root_rank=0)
    assert all(torch.equal(v, want[k]) for k, v in model.state_dict().items())
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert w.stride() == (1, 3)
    with pytest.raises(disttrain.UsageError, match=r"'shared' \(shape \(2, 3\), strides "
                                                   r"\(0, 1\)\) has elements that share"):
        dt.broadcast_parameters({"shared": torch.zeros(3).expand(2, 3)}, 0)
    with pytest.raises(disttrain.UsageError, match="'phase': dtype complex64"):
        dt.broadcast_parameters({"phase": torch.zeros(2, dtype=torch.complex64)}, 0)


def test_non_contiguous_tensor_in_place_is_refused(ctx):
    t = torch.zeros(4, 4).t()
    with pytest.raises(disttrain.UsageError, match="not contiguous"):
        dt.allreduce_(t)
    with pytest.raises(disttrain.UsageError, match="not contiguous"):
        dt.broadcast_(t, 0)
    # Out of place copies it (documented) and gives a contiguous result.
    r = dt.allreduce(torch.arange(16.0).reshape(4, 4).t())
    assert r.is_contiguous() and torch.equal(r, torch.arange(16.0).reshape(4, 4).t())


def test_a_non_contiguous_out_is_told_to_be_contiguous(ctx):
    # The caller already uses the out-of-place form: the advice is about out itself.
    t = torch.ones(4, 4)
    out = torch.zeros(4, 4).t()
    for call in (lambda: dt.allreduce(t, out=out), lambda: dt.allreduce(out, out=out),
                 lambda: dt.allreduce_async(t, out=out)):
        with pytest.raises(disttrain.UsageError) as e:
            call()
        assert e.value.message.startswith("out must be contiguous (shape (4, 4), strides "
                                          "(1, 4)): the result is written straight into "
                                          "its memory"), e.value.message
        assert "out-of-place form" not in e.value.message


@pytest.mark.parametrize("value", [0.0, True, "0"])
def test_integer_arguments_of_another_type_are_told_to_be_ints(ctx, value):
    kind = type(value).__name__
    opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    for call in (lambda: dt.broadcast(torch.zeros(2), root_rank=value),
                 lambda: dt.broadcast_(torch.zeros(2), value),
                 lambda: dt.broadcast_async(torch.zeros(2), value),
                 lambda: dt.broadcast_parameters({"w": torch.zeros(2)}, root_rank=value),
                 lambda: dt.broadcast_parameters({}, root_rank=value),
                 lambda: dt.broadcast_optimizer_state(opt, root_rank=value),
                 lambda: dt.broadcast_object("x", root_rank=value)):
        with pytest.raises(disttrain.UsageError,
                           match=rf"root_rank={value!r} must be an int \(a rank of this "
                                 rf"context, 0 <= root_rank < 1\), not {kind}$"):
            call()
    with pytest.raises(disttrain.UsageError, match=rf"splits\[0\]={value!r} must be an "
                                                   rf"int, not {kind}$"):
        dt.alltoall(torch.ones(1, 2), splits=[value])
    with pytest.raises(disttrain.UsageError, match=r"splits must hold ints, not float32"):
        dt.alltoall(torch.ones(1, 2), splits=torch.ones(1))
    with pytest.raises(disttrain.UsageError, match=r"root_rank=1 is not a rank"):
        dt.broadcast_parameters({}, root_rank=1)  # checked with nothing to broadcast


def test_a_name_with_a_nul_is_refused_naming_where(ctx):
    t = torch.ones(4)
    for call in (lambda n: dt.allreduce(t, name=n), lambda n: dt.allreduce_(t, name=n),
                 lambda n: dt.allreduce_async_(t, name=n),
                 lambda n: dt.grouped_allreduce([t], name=n),
                 lambda n: dt.broadcast_(t, 0, name=n), lambda n: dt.allgather(t, name=n),
                 lambda n: dt.reduce_scatter(t, name=n), lambda n: dt.alltoall(t, name=n),
                 lambda n: dt.alltoall(t, splits=[4], name=n),
                 lambda n: dt.allreduce_metric(1.0, name=n),
                 lambda n: dt.broadcast_parameters({n: t}, root_rank=0)):
        with pytest.raises(disttrain.UsageError,
                           match=r"name='(bcast\.|metric\.)?grad\\x00weight' holds a NUL "
                                 r"character"):
            call("grad\x00weight")


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.int16])
def test_unsupported_dtype_names_it(ctx, dtype):
    with pytest.raises(disttrain.UsageError) as e:
        dt.allreduce(torch.zeros(3, dtype=dtype))
    assert str(dtype).replace("torch.", "") in str(e.value)
    assert "bfloat16" in str(e.value)  # lists the supported ones


def test_unsupported_device_and_layout(ctx):
    with pytest.raises(disttrain.UsageError, match="device 'meta'.*CPU tensors only"):
        dt.allreduce(torch.zeros(3, device="meta"))
    with pytest.raises(disttrain.UsageError, match="device 'meta'"):
        dt.allreduce_(torch.zeros(3, device="meta"))
    with pytest.raises(disttrain.UsageError, match="to_dense"):
        dt.allreduce(torch.zeros(3, 3).to_sparse())
    with pytest.raises(disttrain.UsageError, match="torch.Tensor"):
        dt.allreduce_([1.0])


class _FakeCudaTensor(torch.Tensor):
    """A CPU tensor that reports device cuda:1: what disttrain.torch reads of a CUDA
    tensor, on a machine without a GPU. The library must refuse it before any byte of
    it is touched, so its real (CPU) memory is never read as device memory."""

    @property
    def device(self):
        return torch.device("cuda", 1)


def _fake_cuda(monkeypatch, values):
    streams = []

    def current_stream(device=None):
        streams.append(device)
        return type("Stream", (), {"cuda_stream": 0xC0FFEE})()

    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    return values.as_subclass(_FakeCudaTensor), streams


def test_cuda_tensors_pass_device_memory_with_index_and_current_stream(monkeypatch):
    from disttrain.torch import ops
    t, streams = _fake_cuda(monkeypatch, torch.zeros(3))
    p = ops.tensor_memory(t)
    assert (p.memory_type, p.device, p.stream) == (1, 1, 0xC0FFEE)
    assert p.field_mask == 0b111
    assert streams == [torch.device("cuda", 1)]
    assert ops.tensor_memory(torch.zeros(3)) is None  # CPU: host, the default


@pytest.mark.parametrize("call", [dt.allreduce, dt.allreduce_, dt.allreduce_async_,
                                  dt.broadcast_, dt.allgather, dt.reduce_scatter,
                                  dt.alltoall, lambda t: dt.alltoall(t, splits=[4]),
                                  lambda t: dt.grouped_allreduce([t])])
def test_cuda_tensors_are_refused_clearly_without_a_memory_provider(ctx, monkeypatch,
                                                                         call):
    t, _ = _fake_cuda(monkeypatch, torch.ones(4))
    with pytest.raises(disttrain.UsageError) as e:
        r = call(t)
        if isinstance(r, disttrain.Handle):
            r.wait()
    assert e.value.status_name == "DT_ERR_UNSUPPORTED"
    assert "needs a memory provider" in e.value.message


def test_before_init_is_a_clear_error():
    r = dtpy.run([dtpy.PYTHON, "-c",
                  "import torch, disttrain.torch as dt\n"
                  "try:\n    dt.allreduce(torch.ones(2))\n"
                  "except dt.UsageError as e:\n    print('ERR', e)\n"],
                 env=dtpy.job_env(), timeout=60)
    assert "call disttrain.init() first" in r.stdout, r.stdout + r.stderr


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def test_distributed_optimizer_in_one_process_equals_plain_sgd(ctx):
    net, ref = _net(), _net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters())
    assert isinstance(opt, torch.optim.SGD)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.manual_seed(5)
    for _ in range(5):
        x = torch.randn(16, 4)
        for m, o in ((net, opt), (ref, ref_opt)):
            o.zero_grad()
            m(x).square().mean().backward()
            o.step()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert torch.equal(p, q)
    torch.optim.lr_scheduler.StepLR(opt, step_size=1)  # schedulers accept the wrapper


def test_distributed_optimizer_misuse_is_reported(ctx):
    net = _net()
    with pytest.raises(disttrain.UsageError, match="does not cover"):
        dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                named_parameters=list(net.named_parameters())[:1])
    with pytest.raises(disttrain.UsageError, match="appears twice"):
        p = list(net.named_parameters())
        dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                named_parameters=p + p[:1])
    with pytest.raises(disttrain.UsageError, match="backward_passes_per_step"):
        dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                backward_passes_per_step=0)
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters())
    net(torch.ones(1, 4)).sum().backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        net(torch.ones(1, 4)).sum().backward()
    opt.step()
    opt.zero_grad()


@pytest.mark.parametrize("bucket_bytes", [0, 100, 25 << 20])
def test_gradients_become_views_of_the_buckets(ctx, bucket_bytes):
    net, ref = _net(), _net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters(),
                                  bucket_bytes=bucket_bytes)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.manual_seed(7)
    for step in range(4):
        x = torch.randn(8, 4)
        for m, o in ((net, opt), (ref, ref_opt)):
            o.zero_grad(set_to_none=(step == 2))
            m(x).square().mean().backward()
            o.step()
        for p, q in zip(net.parameters(), ref.parameters()):
            assert torch.equal(p.grad, q.grad) and torch.equal(p, q)
    storages = {p.grad.storage().data_ptr() for p in net.parameters()}
    want = {0: 4, 100: 3, 25 << 20: 1}[bucket_bytes]  # 32+8+16+2 floats
    assert len(storages) == want, storages


def _strided_net():
    """A channels_last convolution and a transposed weight: dense, not row-major."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Flatten(),
                              torch.nn.Linear(12, 2)).to(memory_format=torch.channels_last)
    net[2].weight = torch.nn.Parameter(torch.randn(12, 2).t())
    return net


def _bucket_names(net, bucket_bytes):
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters(),
                                  bucket_bytes=bucket_bytes)
    return [b.name for b in opt._buckets]


def _pair(swapped):
    """Two layers of one shape, registered in either order, then a head: the same names
    and shapes, and the same last parameter (the first of the first bucket)."""
    net = torch.nn.Module()
    layers = [("a", torch.nn.Linear(3, 3)), ("b", torch.nn.Linear(3, 3))]
    for name, layer in (reversed(layers) if swapped else layers):
        net.add_module(name, layer)
    net.add_module("head", torch.nn.Linear(3, 3))
    return net


def test_buckets_of_parameters_listed_in_another_order_have_other_names(ctx):
    # A rank that registered its modules in another order fills its buckets in another
    # order; with the same first parameter and count, a bucket of the same name would
    # add up one parameter's gradient with another's, so the names tell them apart.
    bucket_bytes = 25 << 20  # one bucket, of the same first parameter and count
    assert _bucket_names(_pair(True), bucket_bytes) != _bucket_names(_pair(False),
                                                                     bucket_bytes)
    assert _bucket_names(_pair(False), bucket_bytes) == _bucket_names(_pair(False),
                                                                      bucket_bytes)


@pytest.mark.parametrize("bucket_bytes", [0, 25 << 20])
def test_gradients_in_the_buckets_keep_their_parameters_layout(ctx, bucket_bytes):
    net, ref = _strided_net(), _strided_net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters(),
                                  bucket_bytes=bucket_bytes)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.manual_seed(3)
    for _ in range(3):
        x = torch.randn(4, 2, 4, 4).contiguous(memory_format=torch.channels_last)
        for m, o in ((net, opt), (ref, ref_opt)):
            o.zero_grad()
            m(x).square().mean().backward()
            o.step()
        for p, q in zip(net.parameters(), ref.parameters()):
            assert torch.equal(p.grad, q.grad) and torch.equal(p, q)
            assert p.grad.stride() == q.grad.stride() == p.stride()
    # Ranks that lay a parameter out otherwise submit buckets of other names, which never
    # reduce together; row-major parameters keep the plain names.
    other = _strided_net().to(memory_format=torch.contiguous_format)
    assert _bucket_names(other, bucket_bytes) != _bucket_names(_strided_net(), bucket_bytes)
    assert not any("@" in name for name in _bucket_names(_net(), bucket_bytes))


def test_bad_bucket_bytes(ctx):
    with pytest.raises(disttrain.UsageError, match="bucket_bytes"):
        dt.DistributedOptimizer(torch.optim.SGD(_net().parameters(), lr=0.1),
                                bucket_bytes=-1)


def test_ordered_context_in_one_process():
    with disttrain.Context(ordered=True) as c:
        t = torch.arange(4.0)
        assert dt.allreduce_(t, op=dt.Sum, context=c) is t
        assert torch.equal(dt.allreduce_async(t, context=c).wait(), t)


def test_synchronize_then_step_with_clipping(ctx):
    net = _net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters(),
                                  compression=dt.Compression.bf16)
    net(torch.ones(2, 4)).sum().backward()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    with opt.skip_synchronize():
        opt.step()


def test_metrics_and_objects_in_one_process(ctx):
    assert dt.allreduce_metric(2.5, "m") == 2.5
    avg = dt.MetricAverager("acc")
    assert avg.compute() != avg.compute()  # nan without samples
    avg.update(1.0, n=3)
    avg.update(torch.tensor(5.0))
    assert avg.compute() == 2.0
    assert dt.broadcast_object({"a": [1, 2]}, 0) == {"a": [1, 2]}
    opt = torch.optim.SGD(_net().parameters(), lr=0.3)
    dt.broadcast_optimizer_state(opt, 0)
    assert opt.param_groups[0]["lr"] == 0.3


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_torch_helpers_on_two_ranks(ordered):
    # Ordered mode runs collectives in submission order with no negotiation: the
    # optimizer's buckets must be submitted in the same order on both ranks even where
    # one rank's graph skips a layer.
    job = dtpy.run_job("torch_job.py", np=2, env={"DISTTRAIN_ORDERED": ordered},
                       timeout=120)
    dtpy.assert_ranks_ok(job, np=2)


def test_fashion_mnist_two_ranks_match_single_process(tmp_path):
    if not FASHION_MNIST.exists():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    job = dtpy.run_job("train_fmnist.py", "dist", tmp_path, np=2, timeout=150)
    dtpy.assert_ranks_ok(job, np=2)
    ref = dtpy.run_python("train_fmnist.py", "reference", tmp_path, timeout=120)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    r0, r1, single = (torch.load(tmp_path / f"params-{m}.pt")
                      for m in ("dist-0", "dist-1", "reference-0"))
    torch.manual_seed(0)  # the initial weights, as train_fmnist.model(seed=0) makes them
    init = dict(torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 10)).state_dict())
    for name, want in single["params"].items():
        a, b = r0["params"][name], r1["params"][name]
        assert torch.equal(a, b), f"{name} differs between the two ranks"
        assert torch.allclose(a, want, rtol=1e-4, atol=1e-5), \
            f"{name}: max |dist - single| = {(a - want).abs().max().item()}"
        assert not torch.allclose(a, init[name]), f"{name} did not train"
    assert single["last_loss"] < single["first_loss"] * 0.5
    assert abs(r0["last_loss"] - single["last_loss"]) < 1e-4

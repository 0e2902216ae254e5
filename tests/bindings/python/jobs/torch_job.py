# SPDX-License-Identifier: Apache-2.0
"""A 2-rank disttrain.torch job: tensor collectives, broadcast helpers, metrics and
DistributedOptimizer options, each checked; prints "OK rank=R size=N transport=T" on
success. Runs under disttrainrun or a bare mpirun (rank and size from Open MPI)."""
import os

import torch

import disttrain.torch as dt

torch.set_num_threads(1)
dt.init()
r, n = dt.rank(), dt.size()
if "OMPI_COMM_WORLD_RANK" in os.environ:  # started by mpirun: Open MPI numbered us
    assert "DISTTRAIN_RANK" not in os.environ, "mpirun job must not get DISTTRAIN_RANK"
    assert (r, n) == (int(os.environ["OMPI_COMM_WORLD_RANK"]),
                      int(os.environ["OMPI_COMM_WORLD_SIZE"])), (r, n)
    assert dt.local_rank() == int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])


def same(a, b, tol=0.0):
    assert torch.allclose(a.double(), torch.as_tensor(b).double(), atol=tol, rtol=0), (a, b)


# -- collectives on tensors (average by default, as in horovod.torch) -----------------
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    t = torch.full((4, 3), float(r + 1), dtype=dtype)
    same(dt.allreduce(t), torch.full((4, 3), (n + 1) / 2))
    ptr = t.data_ptr()
    dt.allreduce_(t, op=dt.Sum)
    assert t.data_ptr() == ptr and t.dtype == dtype
    same(t, torch.full((4, 3), n * (n + 1) / 2))
b = torch.full((5,), float(r))
dt.broadcast_(b, root_rank=1)
same(b, torch.ones(5))
same(dt.allgather(torch.tensor([[r, r]], dtype=torch.int64)),
     torch.tensor([[i, i] for i in range(n)]))
h1 = dt.allreduce_async(torch.full((1000,), float(r)), name="async.a")
h2 = dt.allreduce_async_(torch.full((10,), r, dtype=torch.int32), op=dt.Max)
h3 = dt.broadcast_async_(torch.full((3,), float(r)), root_rank=0)
same(dt.synchronize(h1), torch.full((1000,), (n - 1) / 2))
same(h2.wait(), torch.full((10,), n - 1))
same(h3.wait(), torch.zeros(3))

# -- broadcast_parameters / broadcast_optimizer_state ----------------------------------
torch.manual_seed(100 + r)  # deliberately different initial weights on each rank
model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4),
                            torch.nn.Linear(4, 2))
dt.broadcast_parameters(model.state_dict(), root_rank=0)
torch.manual_seed(100)
ref = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4),
                          torch.nn.Linear(4, 2))
for (k, v), (_, w) in zip(model.state_dict().items(), ref.state_dict().items()):
    assert torch.equal(v, w), k

opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
if r == 0:  # only rank 0 has momentum state and a changed learning rate
    model(torch.randn(8, 6)).sum().backward()
    opt.step()
    opt.param_groups[0]["lr"] = 0.05
dt.broadcast_optimizer_state(opt, root_rank=0)
assert opt.param_groups[0]["lr"] == 0.05
bufs = [opt.state[p]["momentum_buffer"] for p in model.parameters()]
for buf in bufs:
    gathered = dt.allgather(buf.unsqueeze(0))
    assert torch.equal(gathered[0], gathered[-1])
dt.broadcast_parameters(model.named_parameters(), root_rank=0)


# Tensors that are dense but not row-major (channels_last, transposed), held in another
# layout on the odd ranks than on the root: every rank ends with the root's values,
# element by element, in its own layout.
def strided(seed, channels_last):
    torch.manual_seed(seed)
    conv = torch.nn.Conv2d(3, 4, 3)
    if channels_last:
        conv.to(memory_format=torch.channels_last)
    w = torch.nn.Parameter(torch.randn(5, 3).t())     # strides (1, 3)
    mask = (torch.rand(5, 4) > 0.5).t()               # a transposed bool buffer
    return conv, w, mask


conv, w, mask = strided(200 + r, channels_last=r % 2 == 0)
dt.broadcast_parameters(dict(conv.state_dict(), w=w, mask=mask), root_rank=0)
want_conv, want_w, want_mask = strided(200, channels_last=False)
for got, want in ((conv.weight, want_conv.weight), (conv.bias, want_conv.bias), (w, want_w),
                  (mask, want_mask)):
    assert torch.equal(got, want)
assert conv.weight.is_contiguous(memory_format=torch.channels_last) == (r % 2 == 0)
assert w.stride() == (1, 3) and mask.stride() == (1, 4)
opt = torch.optim.SGD(list(conv.parameters()) + [w], lr=0.1, momentum=0.9)
if r == 0:  # momentum buffers in the parameters' layouts, on the root only
    (conv(torch.randn(2, 3, 5, 5)).sum() + w.sum()).backward()
    opt.step()
dt.broadcast_optimizer_state(opt, root_rank=0)
for p in opt.param_groups[0]["params"]:
    gathered = dt.allgather(opt.state[p]["momentum_buffer"].unsqueeze(0))
    assert torch.equal(gathered[0], gathered[-1])

# -- metrics ---------------------------------------------------------------------------
assert abs(dt.allreduce_metric(float(r), "rank") - (n - 1) / 2) < 1e-12
same(dt.allreduce_metric(torch.tensor([r, 2.0 * r]), "pair"), [(n - 1) / 2, n - 1])
avg = dt.MetricAverager("loss")
for _ in range(r + 1):  # rank r saw r + 1 batches of loss r
    avg.update(torch.tensor(float(r)))
want = sum(i * (i + 1) for i in range(n)) / sum(i + 1 for i in range(n))
assert abs(avg.compute() - want) < 1e-12


# -- DistributedOptimizer: options --------------------------------------------------------
class Net(torch.nn.Module):
    """`extra` is used only for rank 0's data: rank 1's graph never produces its
    gradients, so its buckets complete only in synchronize()."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(5, 4)
        self.extra = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 3)

    def forward(self, x, use_extra):
        h = torch.tanh(self.a(x))
        return self.b(self.extra(h) if use_extra else h)


def train(compression, passes, bucket_bytes, steps=3):
    torch.manual_seed(0)
    net = Net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.5),
                                  named_parameters=net.named_parameters(),
                                  compression=compression, backward_passes_per_step=passes,
                                  bucket_bytes=bucket_bytes)
    torch.manual_seed(1)
    data = torch.randn(steps, passes, n, 2, 5)
    for s in range(steps):
        opt.zero_grad(set_to_none=(s == 1))  # p.grad None: copied into its bucket
        for k in range(passes):  # rank r's half of each batch
            net(data[s, k, r], r == 0).pow(2).sum().backward()
        opt.step()
    # The same in one process: gradients summed over passes, averaged over ranks.
    torch.manual_seed(0)
    ref = Net()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    for s in range(steps):
        ref_opt.zero_grad()
        for k in range(passes):
            for q in range(n):
                (ref(data[s, k, q], q == 0).pow(2).sum() / n).backward()
        ref_opt.step()
    return net, ref


# bucket_bytes: the default (one bucket), 0 (one per tensor), 64 (a few, out of order:
# `extra` is in the middle and completes last on rank 1).
for compression, passes, bucket_bytes, tol in ((dt.Compression.none, 1, 25 << 20, 1e-5),
                                               (dt.Compression.none, 1, 0, 1e-5),
                                               (dt.Compression.none, 2, 64, 1e-5),
                                               (dt.Compression.fp16, 1, 64, 2e-2),
                                               (dt.Compression.bf16, 2, 25 << 20, 1e-1)):
    net, ref = train(compression, passes, bucket_bytes)
    for p, q in zip(net.parameters(), ref.parameters()):
        g = dt.allgather(p.detach().unsqueeze(0))
        assert torch.equal(g[0], g[-1]), f"ranks disagree ({compression.__name__})"
        assert torch.allclose(p, q, atol=tol, rtol=tol), \
            (compression.__name__, passes, bucket_bytes, p, q)


# Parameters that are dense but not row-major: the averaged gradients equal averaging by
# hand, and each stays in its parameter's layout (a view of its bucket after a step).
def strided_net():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Tanh(), torch.nn.Flatten(),
                              torch.nn.Linear(64, 2)).to(memory_format=torch.channels_last)
    net[3].weight = torch.nn.Parameter(torch.randn(64, 2).t())   # strides (1, 2)
    return net


for bucket_bytes in (25 << 20, 0):
    net = strided_net()
    opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                  named_parameters=net.named_parameters(),
                                  bucket_bytes=bucket_bytes)
    for step in range(3):
        torch.manual_seed(10 + step)
        x = torch.randn(2 * n, 3, 6, 6).contiguous(memory_format=torch.channels_last)
        grads = []
        for q in range(n):
            ref = strided_net()
            ref.load_state_dict(net.state_dict())
            ref(x[2 * q:2 * q + 2]).square().mean().backward()
            grads.append([p.grad for p in ref.parameters()])
        opt.zero_grad()
        net(x[2 * r:2 * r + 2]).square().mean().backward()
        opt.synchronize()
        for (name, p), want in zip(net.named_parameters(), zip(*grads)):
            assert torch.allclose(p.grad, sum(want) / n, atol=1e-6, rtol=1e-5), name
            assert p.grad.stride() == p.stride(), (name, p.grad.stride(), p.stride())
        with opt.skip_synchronize():
            opt.step()

transport = dt.transport()
dt.shutdown()
print(f"OK rank={r} size={n} transport={transport}", flush=True)

# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank job of disttrain.torch.DistributedDataParallel, checked against one process
training the same model on the whole batch: the wrapper starts every rank from rank 0's
parameters and buffers, backward leaves the gradients averaged (in one bucket, and in many
buckets overlapping backward; also of channels_last and transposed parameters, against
averaging by hand, each gradient in its parameter's layout, and ranks whose layouts differ
are refused), no_sync() accumulates locally until the next synchronised backward, with
SyncBatchNorm the job trains exactly as one process with BatchNorm on the whole batch, and
process_set= keeps the reduction inside the set. Prints "OK"."""
import torch

import disttrain
import disttrain.torch as dt

torch.set_num_threads(1)
dt.init()
r, n = dt.rank(), dt.size()
PER_RANK = 4


def net(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8),
                               torch.nn.Linear(8, 3))


def data(step):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(PER_RANK * n, 6, generator=g), torch.randn(PER_RANK * n, 3, generator=g)


def mine(t):
    return t[r * PER_RANK:(r + 1) * PER_RANK]


def close(a, b, what, tol=1e-5):
    for (name, x), y in zip(a, b):
        assert torch.allclose(x, y, atol=tol, rtol=1e-4), (what, name, (x - y).abs().max())


def loss_fn(out, y):
    return torch.nn.functional.mse_loss(out, y)


def reference(steps, micro=1):
    """One process, the whole batch: what data-parallel training must reproduce. Each
    rank's BatchNorm sees only its own rows, so the reference normalises per slice."""
    model = net(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        opt.zero_grad()
        for m in range(micro):
            x, y = data(step * micro + m)
            # The mean over ranks of each rank's loss on its own rows.
            loss = sum(loss_fn(model(x[k * PER_RANK:(k + 1) * PER_RANK]),
                               y[k * PER_RANK:(k + 1) * PER_RANK]) for k in range(n)) / n
            loss.backward()
        opt.step()
    return model


# -- construction copies rank 0's parameters and buffers ------------------------------
for bucket_bytes in (25 << 20, 64):   # one bucket, and a bucket per tensor or two
    model = net(0 if r == 0 else 50 + r)   # other ranks start elsewhere on purpose
    if r != 0:
        model[3].running_mean.fill_(float(r))
    ddp = dt.DistributedDataParallel(model, bucket_bytes=bucket_bytes)
    ref0 = net(0)
    close(ddp.module.state_dict().items(), ref0.state_dict().values(), "construction")
    assert (len(ddp._buckets) == 1) if bucket_bytes > 1000 else (len(ddp._buckets) > 2)

    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        x, y = data(step)
        loss_fn(ddp(mine(x)), mine(y)).backward()
        # Averaged when backward returns: every rank holds the same gradients.
        grads = torch.cat([p.grad.reshape(-1) for p in ddp.parameters()])
        everyone = dt.allgather(grads.unsqueeze(0), name=f"grads.{bucket_bytes}.{step}")
        assert all(torch.equal(everyone[0], g) for g in everyone), "gradients differ"
        opt.step()
    close(ddp.module.named_parameters(), reference(3).parameters(),
          f"training, bucket_bytes={bucket_bytes}")
    assert list(ddp.state_dict())[0].startswith("module."), list(ddp.state_dict())[:2]


# -- parameters that are dense but not row-major --------------------------------------
class Strided(torch.nn.Module):
    """A channels_last convolution and a transposed weight: their memory is dense in
    another order than row-major, and so is the memory of their gradients."""

    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.w = torch.nn.Parameter(torch.randn(3, 16).t())   # strides (1, 16)
        self.to(memory_format=torch.channels_last)

    def forward(self, x):
        return torch.flatten(self.bn(self.conv(x)).mean(1), 1) @ self.w


def strided_data(step):
    g = torch.Generator().manual_seed(2000 + step)
    x = torch.randn(PER_RANK * n, 3, 6, 6, generator=g)
    return x.contiguous(memory_format=torch.channels_last), torch.randn(PER_RANK * n, 3,
                                                                        generator=g)


def averaged_by_hand(model, x, y):
    """Each rank's gradient on its own rows, averaged: what DDP's backward must leave."""
    grads = []
    for k in range(n):
        copy = Strided(0)
        copy.load_state_dict(model.state_dict())
        rows = slice(k * PER_RANK, (k + 1) * PER_RANK)
        loss_fn(copy(x[rows]), y[rows]).backward()
        grads.append([p.grad for p in copy.parameters()])
    return [sum(g) / n for g in zip(*grads)]


for bucket_bytes in (25 << 20, 0):
    ddp = dt.DistributedDataParallel(Strided(0 if r == 0 else 60 + r),
                                     bucket_bytes=bucket_bytes)
    close(ddp.module.state_dict().items(), Strided(0).state_dict().values(),
          "strided construction")
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(3):  # the first step copies the gradients into the buckets
        opt.zero_grad()
        x, y = strided_data(step)
        want = averaged_by_hand(ddp.module, x, y)
        loss_fn(ddp(mine(x)), mine(y)).backward()
        close([(name, p.grad) for name, p in ddp.module.named_parameters()], want,
              f"strided gradients, bucket_bytes={bucket_bytes}, step {step}")
        # In the bucket, each gradient keeps its parameter's layout, as autograd's.
        for name, p in ddp.module.named_parameters():
            assert p.grad.stride() == p.stride(), (name, p.grad.stride(), p.stride())
            assert p.grad._base is not None, name  # a view of its bucket
        opt.step()

# Ranks that hold a parameter in other layouts would reduce mismatched memory: refused
# on every rank, naming the parameter.
if n > 1:
    other = Strided(0)
    if r == 1:
        other.conv.to(memory_format=torch.contiguous_format)
    try:
        dt.DistributedDataParallel(other)
        raise AssertionError("DistributedDataParallel took parameters of other layouts")
    except disttrain.UsageError as e:
        assert "parameter 'conv.weight' (shape (4, 3, 3, 3), strides" in str(e), e


# Ranks that list their parameters in another order (modules registered in another order,
# the same names and shapes) would reduce one parameter's gradient with another's: refused
# on every rank, naming the parameter.
class Pair(torch.nn.Module):
    def __init__(self, swapped):
        super().__init__()
        torch.manual_seed(0)
        layers = [("a", torch.nn.Linear(3, 3)), ("b", torch.nn.Linear(3, 3))]
        for name, layer in (reversed(layers) if swapped else layers):
            self.add_module(name, layer)

    def forward(self, x):
        return self.b(self.a(x))


if n > 1:
    try:
        dt.DistributedDataParallel(Pair(swapped=r == 1))
        raise AssertionError("DistributedDataParallel took parameters in another order")
    except disttrain.UsageError as e:
        assert "parameter 0 is '" in str(e) and "in the same order" in str(e), e

# -- no_sync: local accumulation, reduced by the next synchronised backward -----------
ddp = dt.DistributedDataParallel(net(0), bucket_bytes=128)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for step in range(2):
    opt.zero_grad()
    x, y = data(2 * step)
    with ddp.no_sync():
        loss_fn(ddp(mine(x)), mine(y)).backward()
    local = [p.grad.clone() for p in ddp.parameters()]
    everyone = dt.allgather(torch.cat([g.reshape(-1) for g in local]).unsqueeze(0),
                            name=f"nosync.{step}")
    assert n == 1 or not torch.equal(everyone[0], everyone[1]), "no_sync() reduced"
    x, y = data(2 * step + 1)
    loss_fn(ddp(mine(x)), mine(y)).backward()
    opt.step()
# The average over ranks of each rank's two micro-batch gradients: the reference's
# gradient of the two micro-batches' mean-over-ranks losses.
want = reference(2, micro=2)
close(ddp.module.named_parameters(), want.parameters(), "no_sync", tol=1e-5)

# -- with SyncBatchNorm: exactly one process training on the whole batch ---------------
# Batch statistics over every rank's rows, and gradients averaged over the ranks: the
# same as plain BatchNorm on the whole batch with the whole batch's mean loss.
sync = dt.DistributedDataParallel(dt.SyncBatchNorm.convert_sync_batchnorm(net(0)),
                                  bucket_bytes=128)
whole = net(0)
for model, rows in ((sync, mine), (whole, lambda t: t)):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        opt.zero_grad()
        x, y = data(step)
        loss_fn(model(rows(x)), rows(y)).backward()
        opt.step()
close(sync.module.named_parameters(), whole.parameters(), "DDP with SyncBatchNorm")
close([("running_mean", sync.module[3].running_mean)], [whole[3].running_mean],
      "SyncBatchNorm running mean")

# -- process_set=: a set of one rank never hears from the others -----------------------
alone = [disttrain.add_process_set([k]) for k in range(n)][r]
solo = dt.DistributedDataParallel(net(10 + r), process_set=alone, bucket_bytes=64)
local = net(10 + r)
for model in (solo, local):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        x, y = data(step)
        loss_fn(model(mine(x)), mine(y)).backward()
        opt.step()
close(solo.module.named_parameters(), local.parameters(), "process set of one")
# Wrappers made over one set only on its members do not change the names of the next
# job-wide wrapper's buckets (counted per context or set): the ranks still agree.
if r == 0:
    dt.DistributedDataParallel(net(1), process_set=alone)
world = dt.DistributedDataParallel(net(0), bucket_bytes=64)
loss_fn(world(mine(data(0)[0])), mine(data(0)[1])).backward()
grads = torch.cat([p.grad.reshape(-1) for p in world.parameters()]).unsqueeze(0)
everyone = dt.allgather(grads, name="grads.after.sets")
assert all(torch.equal(everyone[0], g) for g in everyone), "gradients differ"
alone.close()

# The sets ran apart; a rank that shut down while another's set still reduces would fail
# it (a rank leaving the job fails the operations in flight), so meet first.
dt.barrier()
dt.shutdown()
print("OK", flush=True)

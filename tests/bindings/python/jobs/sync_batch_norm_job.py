# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank job of disttrain.torch.SyncBatchNorm: each rank normalises its slice of one
batch (also in channels_last); the outputs, the input gradients, the weight and bias
gradients summed over the ranks, and the running statistics must equal plain BatchNorm on
the whole batch in one process. Eval mode uses the running statistics and no collective.
Prints "OK"."""
import torch

import disttrain.torch as dt

torch.set_num_threads(1)
dt.init()
r, n = dt.rank(), dt.size()
PER_RANK = 3


def close(a, b, what, tol=1e-5):
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert torch.allclose(a, b, atol=tol, rtol=1e-4), (what, (a - b).abs().max())


def check(plain, shape, dtype=torch.float32, memory_format=torch.contiguous_format):
    """plain: a torch BatchNorm layer; shape: one rank's input shape."""
    plain = plain.to(dtype)
    g = torch.Generator().manual_seed(7)
    x = torch.randn((PER_RANK * n,) + shape[1:], generator=g, dtype=dtype) * 3 + 1
    upstream = torch.randn(x.shape, generator=g, dtype=dtype)
    x, upstream = (t.contiguous(memory_format=memory_format) for t in (x, upstream))
    with torch.no_grad():
        plain.weight.copy_(torch.rand(plain.num_features, generator=g) + 0.5)
        plain.bias.copy_(torch.randn(plain.num_features, generator=g))
    sync = dt.SyncBatchNorm.convert_sync_batchnorm(
        type(plain)(plain.num_features, momentum=plain.momentum).to(dtype))
    sync.load_state_dict(plain.state_dict())

    whole = x.clone().requires_grad_()
    ref = plain(whole)
    (ref * upstream).sum().backward()

    rows = slice(r * PER_RANK, (r + 1) * PER_RANK)
    part = x[rows].clone().requires_grad_()
    out = sync(part)
    (out * upstream[rows]).sum().backward()

    what = f"{type(plain).__name__}{tuple(shape)}"
    close(out.detach(), ref.detach()[rows], f"{what} output")
    close(part.grad, whole.grad[rows], f"{what} input gradient")
    for name in ("weight", "bias"):
        total = dt.allreduce(getattr(sync, name).grad, op=dt.Sum, name=f"{what}.{name}")
        close(total, getattr(plain, name).grad, f"{what} {name} gradient (sum over ranks)")
    close(sync.running_mean, plain.running_mean, f"{what} running mean")
    close(sync.running_var, plain.running_var, f"{what} running var")
    assert int(sync.num_batches_tracked) == 1
    return sync, plain, x


sync, plain, x = check(torch.nn.BatchNorm2d(3), (PER_RANK, 3, 4, 5))
check(torch.nn.BatchNorm2d(3), (PER_RANK, 3, 4, 5), memory_format=torch.channels_last)
check(torch.nn.BatchNorm1d(4), (PER_RANK, 4))
check(torch.nn.BatchNorm1d(2, momentum=None), (PER_RANK, 2, 6), torch.float64)

# eval mode: running statistics, no collective (only rank 0 runs it; no rank waits)
sync.eval()
plain.eval()
if r == 0:
    for _ in range(3):
        close(sync(x[:2]), plain(x[:2]), "eval output")
dt.barrier()

# convert_sync_batchnorm: nested layers replaced, parameters kept, mode kept
model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                            torch.nn.Sequential(torch.nn.Flatten(), torch.nn.BatchNorm1d(8)))
model[2].eval()
weight = model[1].weight
converted = dt.SyncBatchNorm.convert_sync_batchnorm(model)
assert isinstance(converted[1], dt.SyncBatchNorm) and converted[1].weight is weight
assert isinstance(converted[2][1], dt.SyncBatchNorm) and not converted[2][1].training
assert isinstance(converted[0], torch.nn.Conv2d)

dt.shutdown()
print("OK", flush=True)

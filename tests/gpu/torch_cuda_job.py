#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A rank of tests/gpu/run.sh's torch job: disttrain.torch on CUDA tensors.

Every rank fills its tensor on torch's current stream only after a long spin kernel
(torch.cuda._sleep), so a collective that did not wait for the producer's stream would
read the old values; then allreduce (sum and average), broadcast, allgather, and a few
steps of DistributedOptimizer on a small CUDA model, whose parameters must end equal on
every rank. Run under `disttrainrun -np 2` with DISTTRAIN_MEMORY=cuda. Prints
`torch-cuda rank R: ok` or raises.
"""
import hashlib

import torch

import disttrain.torch as dt


def check(what, got, want):
    if not torch.equal(got.cpu(), want.cpu()):
        raise AssertionError(f"{what}: got {got.cpu()[:4].tolist()}..., "
                             f"want {want.cpu()[:4].tolist()}...")


def main():
    dt.init()
    rank, size = dt.rank(), dt.size()
    torch.cuda.set_device(0)  # the ranks share the one GPU
    n = 1 << 20
    expected = float(size * (size + 1) // 2)
    for trial in range(3):
        x = torch.zeros(n, device="cuda")
        torch.cuda._sleep(50_000_000)  # tens of milliseconds of spinning before the fill
        x.fill_(rank + 1)
        dt.allreduce_(x, op=dt.Sum, name=f"sum.{trial}")
        check("allreduce sum", x, torch.full((n,), expected))
        y = torch.full((n,), float(rank + 1), device="cuda")
        avg = dt.allreduce(y, name=f"avg.{trial}")
        check("allreduce average", avg, torch.full((n,), expected / size))
    b = torch.full((1000,), float(rank), device="cuda")
    torch.cuda._sleep(20_000_000)
    b.add_(10)
    dt.broadcast_(b, root_rank=size - 1, name="bcast")
    check("broadcast", b, torch.full((1000,), float(size - 1 + 10)))
    g = dt.allgather(torch.full((3,), float(rank), device="cuda"), name="gather")
    check("allgather", g, torch.arange(size, dtype=torch.float32).repeat_interleave(3))

    torch.manual_seed(rank)  # different starts: broadcast_parameters must make them equal
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    dt.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = dt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                  named_parameters=model.named_parameters())
    data = torch.randn(64, 256, device="cuda") + rank
    target = torch.randint(0, 10, (64,), device="cuda")
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().cpu().numpy().tobytes())
    mine = torch.tensor(list(digest.digest()[:8]), dtype=torch.float64, device="cuda")
    every = dt.allgather(mine, name="digest").view(size, 8)
    if not all(torch.equal(every[0], every[r]) for r in range(size)):
        raise AssertionError("DistributedOptimizer left the ranks with different models")
    if not losses[-1] < losses[0]:
        raise AssertionError(f"the loss did not fall: {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"torch-cuda rank {rank}: ok (loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
          f"models equal on {size} ranks)", flush=True)
    dt.shutdown()


if __name__ == "__main__":
    main()

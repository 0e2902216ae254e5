# SPDX-License-Identifier: Apache-2.0
"""Training with disttrain (after): torchrun --nproc-per-node 2 port_ddp.py, with the
same DISTTRAIN_JOB_TOKEN exported on every node (torchrun has no secret to share)."""
import hashlib

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import disttrain.torch as dt

dt.init()  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from torchrun
rank, world = dt.rank(), dt.size()
torch.set_num_threads(1)
torch.manual_seed(rank)  # each rank draws its own initial weights; DDP copies rank 0's

# A regression task: y = x @ w_true + noise, the same data set on every rank.
g = torch.Generator().manual_seed(0)
x = torch.randn(512, 10, generator=g)
y = x @ torch.randn(10, 1, generator=g) + 0.01 * torch.randn(512, 1, generator=g)
sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank,
                             shuffle=True, seed=0)
loader = DataLoader(TensorDataset(x, y), batch_size=32, sampler=sampler)

model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.BatchNorm1d(32),
                            torch.nn.ReLU(), torch.nn.Linear(32, 1))
model = dt.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

losses = []
for epoch in range(3):
    sampler.set_epoch(epoch)
    for step, (xb, yb) in enumerate(loader):
        if step % 2 == 0:  # accumulate two batches: no gradient exchange on the first
            with model.no_sync():
                F.mse_loss(model(xb), yb).backward()
            continue
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reduced = loss.detach().clone()
        dt.allreduce_(reduced, op=dt.Sum)
        losses.append(reduced.item() / world)

digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                 for p in model.parameters())).hexdigest()[:16]
print(f"rank {rank}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, parameters {digest}")
dt.shutdown()

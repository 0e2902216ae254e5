# SPDX-License-Identifier: Apache-2.0
"""Training with Horovod (before): horovodrun -np 2 python3 horovod_train.py"""
import hashlib

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import horovod.torch as hvd

hvd.init()
torch.set_num_threads(1)
torch.manual_seed(hvd.rank())  # each rank draws its own initial weights; rank 0's win

# A regression task: y = x @ w_true + noise, the same data set on every rank.
g = torch.Generator().manual_seed(0)
x = torch.randn(512, 10, generator=g)
y = x @ torch.randn(10, 1, generator=g) + 0.01 * torch.randn(512, 1, generator=g)
sampler = DistributedSampler(TensorDataset(x, y), num_replicas=hvd.size(), rank=hvd.rank(),
                             shuffle=True, seed=0)
loader = DataLoader(TensorDataset(x, y), batch_size=32, sampler=sampler)

model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

losses = []
for epoch in range(3):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        losses.append(hvd.allreduce(loss.detach(), name="loss").item())

digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                 for p in model.parameters())).hexdigest()[:16]
print(f"rank {hvd.rank()}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, parameters {digest}")

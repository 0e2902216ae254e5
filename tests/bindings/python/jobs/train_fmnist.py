# SPDX-License-Identifier: Apache-2.0
"""Trains a small MLP on Fashion-MNIST with plain SGD (no momentum), global batch B.

    train_fmnist.py dist OUT       under disttrainrun: each rank takes its 1/size share of
                                   every global batch, DistributedOptimizer(op=Average)
    train_fmnist.py reference OUT  one process, torch.optim.SGD on the whole global batch

Both start from the same seed (dist ranks other than 0 start from a different one and get
rank 0's weights through broadcast_parameters) and save the final parameters to
OUT/params-<mode>-<rank>.pt, with the first and last training losses.
"""
import gzip
import os
import pathlib
import sys

import numpy as np
import torch

DATA = pathlib.Path(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
STEPS = int(os.environ.get("TRAIN_STEPS", "300"))
BATCH = 64  # global batch
LR = 0.05


def read_idx(name, count):
    """The first `count` items of an IDX gz file (images scaled to [0, 1])."""
    with gzip.open(DATA / name, "rb") as f:
        header = f.read(4)
        ndim = header[3]
        dims = np.frombuffer(f.read(4 * ndim), dtype=">u4").astype(int)
        item = int(np.prod(dims[1:])) if ndim > 1 else 1
        count = min(count, int(dims[0]))
        raw = np.frombuffer(f.read(count * item), dtype=np.uint8)
    if ndim == 1:
        return raw.astype(np.int64)
    return raw.reshape(count, item).astype(np.float32) / 255.0


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 10))


def main():
    mode, out = sys.argv[1], pathlib.Path(sys.argv[2])
    torch.set_num_threads(1)
    n_items = STEPS * BATCH
    x = torch.from_numpy(read_idx("train-images-idx3-ubyte.gz", n_items))
    y = torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz", n_items))
    loss_fn = torch.nn.CrossEntropyLoss()  # mean over the (local) batch
    if mode == "dist":
        import disttrain.torch as dt
        dt.init()
        rank, size = dt.rank(), dt.size()
        net = model(seed=0 if rank == 0 else 1234)
        dt.broadcast_parameters(net.state_dict(), root_rank=0)
        opt = dt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=LR),
                                      named_parameters=net.named_parameters(), op=dt.Average)
        local = BATCH // size
    else:
        rank, size, local = 0, 1, BATCH
        net = model(seed=0)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
    losses = []
    for step in range(STEPS):
        lo = step * BATCH + rank * local
        xb, yb = x[lo:lo + local], y[lo:lo + local]
        opt.zero_grad()
        loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    if mode == "dist":
        first = dt.allreduce_metric(np.mean(losses[:10]), "first_loss")
        last = dt.allreduce_metric(np.mean(losses[-10:]), "last_loss")
        dt.shutdown()
    else:
        first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    state = {k: v.clone() for k, v in net.state_dict().items()}
    torch.save({"params": state, "first_loss": first, "last_loss": last},
               out / f"params-{mode}-{rank}.pt")
    print(f"OK loss {first:.3f} -> {last:.3f}", flush=True)


if __name__ == "__main__":
    main()

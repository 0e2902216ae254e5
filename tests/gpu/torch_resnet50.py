#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of tests/gpu/run.sh: synthetic ResNet-50 training on the GPU with
PyTorch's defaults (cuDNN convolutions in TF32, fp32 elsewhere), SGD with momentum, the
same batch as disttrain-bench. `--ranks 2` runs DistributedDataParallel over gloo with
both processes on the one GPU: gloo stages CUDA tensors through the host, as
disttrain's staging does, so it is the peer of disttrain's 2-rank run.

    python3 tests/gpu/torch_resnet50.py --batch-size 64 --iters 20 [--ranks 2]

Prints `torch resnet50 ranks=N images/sec total: X`. A benchmark: it never asserts.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
import torchvision


def worker(rank, ranks, args, port, queue):
    torch.manual_seed(1)
    if ranks > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
    device = torch.device("cuda", 0)
    model = torchvision.models.resnet50().to(device)
    if ranks > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch_size, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (args.batch_size,), device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    torch.cuda.synchronize()
    rate = args.batch_size * args.iters / (time.perf_counter() - start)
    queue.put(rate)
    if ranks > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--ranks", type=int, default=1)
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, args.ranks, args, port, queue))
             for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    rates = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    print(f"torch resnet50 ranks={args.ranks} batch={args.batch_size} "
          f"images/sec total: {sum(rates):.1f}", flush=True)


if __name__ == "__main__":
    main()

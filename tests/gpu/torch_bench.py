#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of tests/gpu/run.sh: synthetic training on the GPU, the same models,
batches and optimizer (SGD with momentum) as disttrain-bench, in three precisions:

- `default`: PyTorch's defaults, cuDNN convolutions in TF32, matmuls in float32;
- `fp32`: strict float32 (torch.backends.cudnn.allow_tf32 = False);
- `bf16`: autocast to bfloat16 over the defaults.

`--ranks 2` runs DistributedDataParallel over gloo with both processes on the one GPU:
gloo stages CUDA tensors through the host, as disttrain's staging does, so it is the
peer of disttrain's 2-rank run.

    python3 tests/gpu/torch_bench.py --model resnet50 --batch-size 64 \\
        --precision default,fp32,bf16 [--ranks 2]

Prints `torch MODEL PRECISION ranks=N batch=B images/sec total: X` per precision. A
benchmark: it never asserts.
"""
import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torchvision


def build(model):
    if model == "resnet50":
        return torchvision.models.resnet50(), (3, 224, 224), 1000
    # disttrain's mlp: 784-1000-1000-10 with ReLU
    return (nn.Sequential(nn.Flatten(), nn.Linear(784, 1000), nn.ReLU(), nn.Linear(1000, 1000),
                          nn.ReLU(), nn.Linear(1000, 10)), (1, 28, 28), 10)


def rate(model_name, precision, ranks, args):
    torch.manual_seed(1)
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    device = torch.device("cuda", 0)
    net, shape, classes = build(model_name)
    model = net.to(device)
    if ranks > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch_size, *shape, device=device)
    y = torch.randint(0, classes, (args.batch_size,), device=device)
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if precision == "bf16"
                else contextlib.nullcontext())

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    torch.cuda.synchronize()
    rate = args.batch_size * args.iters / (time.perf_counter() - start)
    if args.profile and ranks == 1:
        print_profile(f"{model_name} {precision}", step, args.profile)
    return rate


def print_profile(what, step, steps):
    """Where PyTorch's GPU time goes, operator by operator, per step: the peer of
    disttrain's DISTTRAIN_CUDNN_PROFILE table."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0)
        if us > 0:
            rows.append((us / steps, e.count // steps, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"torch profile {what}: {total / 1000:.2f} ms of GPU time per step")
    for us, calls, key in rows[:18]:
        print(f"  {us / 1000:8.3f} ms {100 * us / total:5.1f}% {calls:5d} calls  {key[:90]}")


def worker(rank, ranks, args, port, queue):
    if ranks > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
    for precision in args.precision.split(","):
        queue.put((precision, rate(args.model, precision, ranks, args)))
    if ranks > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["resnet50", "mlp"], default="resnet50")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--precision", default="default",
                   help="comma-separated: default, fp32, bf16")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="after timing, profile STEPS steps and print GPU time by operator")
    args = p.parse_args()
    for precision in args.precision.split(","):
        if precision not in ("default", "fp32", "bf16"):
            p.error(f"--precision {precision!r}: choose from default, fp32, bf16")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, args.ranks, args, port, queue))
             for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    totals = {}
    for _ in range(len(procs) * len(args.precision.split(","))):
        precision, r = queue.get()
        totals[precision] = totals.get(precision, 0.0) + r
    for proc in procs:
        proc.join()
    for precision in args.precision.split(","):
        print(f"torch {args.model} {precision} ranks={args.ranks} batch={args.batch_size} "
              f"images/sec total: {totals[precision]:.1f}", flush=True)


if __name__ == "__main__":
    main()

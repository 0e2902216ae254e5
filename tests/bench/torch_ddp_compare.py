#!/usr/bin/env python3
"""Steps per second of a PyTorch training step on 2 ranks: disttrain.torch's
DistributedOptimizer against torch.nn.parallel.DistributedDataParallel on gloo.

Same model, per-rank batch, threads per rank (1) and launcher (disttrainrun) for both;
the two are run alternately, round after round, so drifts in machine load hit both.
Prints every round, the medians and their ratio. A benchmark: it never asserts a time.

    /usr/bin/python3 tests/bench/torch_ddp_compare.py [--rounds 5] [--steps 100]
        [--warmup 10] [--model mlp|cnn] [--batch 64] [--np 2]

The build tree is DISTTRAIN_BUILD_DIR (default <repo>/build). Internally the script
re-runs itself under disttrainrun as `--worker disttrain|ddp`.
"""
import argparse
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")).resolve()


def make_model(kind):
    import torch
    nn = torch.nn
    torch.manual_seed(0)
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                         nn.ReLU(), nn.Linear(512, 10))


def worker(args):
    import torch
    torch.set_num_threads(1)
    rank = int(os.environ["DISTTRAIN_RANK"])
    size = int(os.environ["DISTTRAIN_SIZE"])
    model = make_model(args.model)
    loss_fn = torch.nn.CrossEntropyLoss()
    torch.manual_seed(1 + rank)
    xs = torch.rand(8, args.batch, 1, 28, 28)  # a few fixed batches, cycled
    ys = torch.randint(0, 10, (8, args.batch))
    if args.worker == "disttrain":
        import disttrain.torch as dt
        dt.init()
        dt.broadcast_parameters(model.state_dict(), root_rank=0)
        extra = {} if args.bucket_bytes is None else {"bucket_bytes": args.bucket_bytes}
        opt = dt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                      named_parameters=model.named_parameters(), **extra)
        net = model
        barrier = dt.barrier
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                                rank=rank, world_size=size)
        net = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        barrier = dist.barrier

    phases = {"forward": [], "backward": [], "step": [], "cpu": []}
    clock = time.perf_counter

    def step(i):
        opt.zero_grad()
        loss_fn(net(xs[i % 8]), ys[i % 8]).backward()
        opt.step()

    def profiled_step(i):
        c0 = time.process_time()  # every thread of the process: engine, gloo, torch
        t0 = clock()
        opt.zero_grad()
        loss = loss_fn(net(xs[i % 8]), ys[i % 8])
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        t3 = clock()
        phases["cpu"].append(time.process_time() - c0)
        phases["forward"].append(t1 - t0)
        phases["backward"].append(t2 - t1)
        phases["step"].append(t3 - t2)

    run = profiled_step if args.profile else step
    for i in range(args.warmup):
        step(i)
    barrier()
    start = time.perf_counter()
    for i in range(args.steps):
        run(i)
    barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"RESULT {args.steps / elapsed:.3f}", flush=True)
        if args.profile:
            print("PROFILE " + " ".join(f"{k}={statistics.median(v) * 1e3:.3f}"
                                        for k, v in phases.items()), flush=True)
    if args.worker == "disttrain":
        dt.shutdown()
    else:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_round(kind, args):
    """One job of `kind`; returns (steps/s on rank 0, {phase: median ms} or {})."""
    launcher = BUILD / "core" / "launch" / "disttrainrun"
    cmd = [str(launcher), "-np", str(args.np), "--timeout", "300", "--",
           "/usr/bin/python3", str(pathlib.Path(__file__).resolve()), "--worker", kind,
           "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--port", str(free_port())]
    if args.profile:
        cmd.append("--profile")
    if args.bucket_bytes is not None:
        cmd += ["--bucket-bytes", str(args.bucket_bytes)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTTRAIN_")}
    env.update(PYTHONPATH=str(REPO / "bindings" / "python"), OMP_NUM_THREADS="1",
               DISTTRAIN_LIBRARY=str(BUILD / "core" / "libdisttrain.so"),
               DISTTRAIN_PLUGIN_PATH=str(BUILD / "plugins" / "transport" / "tcp"))
    if kind == "disttrain":
        env.update(kv.split("=", 1) for kv in args.dt_env)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=360)
    m = re.search(r"RESULT ([0-9.]+)", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"{kind} round failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    prof = re.search(r"PROFILE (.*)", r.stdout)
    phases = {}
    if prof:
        phases = {k: float(v) for k, v in (kv.split("=") for kv in prof.group(1).split())}
    return float(m.group(1)), phases


def loadavg():
    try:
        return pathlib.Path("/proc/loadavg").read_text().split()[0]
    except OSError:  # pragma: no cover - not Linux
        return "?"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", choices=["disttrain", "ddp"])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--profile", action="store_true",
                   help="also time forward, backward and step, and the CPU time of "
                        "the whole process per step (median ms on rank 0)")
    p.add_argument("--bucket-bytes", type=int, default=None,
                   help="DistributedOptimizer(bucket_bytes=...) (default: its default)")
    p.add_argument("--dt-env", action="append", default=[], metavar="VAR=VALUE",
                   help="extra environment of the disttrain rounds (experiments)")
    args = p.parse_args()
    if args.worker:
        return worker(args)

    import torch
    params = sum(t.numel() for t in make_model(args.model).parameters())
    print(f"torch_ddp_compare: torch {torch.__version__}, model {args.model} "
          f"({params} parameters), batch {args.batch} per rank, {args.np} ranks x 1 "
          f"thread, {args.rounds} rounds x {args.steps} steps (+{args.warmup} warm-up)"
          + (f", disttrain env {' '.join(args.dt_env)}" if args.dt_env else ""))
    print(f"load average at start: {loadavg()}", flush=True)
    results = {"disttrain": [], "ddp": []}
    phases = {"disttrain": {}, "ddp": {}}
    for i in range(args.rounds):
        order = ("disttrain", "ddp") if i % 2 == 0 else ("ddp", "disttrain")
        for kind in order:
            rate, prof = run_round(kind, args)
            results[kind].append(rate)
            for k, v in prof.items():
                phases[kind].setdefault(k, []).append(v)
        print(f"round {i + 1}: disttrain {results['disttrain'][-1]:.1f} steps/s, "
              f"ddp(gloo) {results['ddp'][-1]:.1f} steps/s (load {loadavg()})", flush=True)
    dt_med = statistics.median(results["disttrain"])
    ddp_med = statistics.median(results["ddp"])
    for kind in ("disttrain", "ddp"):
        if phases[kind]:
            print(f"median ms per step, {kind}: " + ", ".join(
                f"{k} {statistics.median(v):.2f}" for k, v in phases[kind].items()))
    print(f"load average at end: {loadavg()}")
    print(f"median steps/s: disttrain.torch.DistributedOptimizer {dt_med:.1f}, "
          f"DistributedDataParallel(gloo) {ddp_med:.1f}, ratio {dt_med / ddp_med:.2f}x")


if __name__ == "__main__":
    main()

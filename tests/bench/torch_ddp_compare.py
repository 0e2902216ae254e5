#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Steps per second of a PyTorch training step on 2 ranks: disttrain.torch's
DistributedOptimizer against torch.nn.parallel.DistributedDataParallel on gloo.

Same model, per-rank batch, threads per rank (1) and launcher (disttrainrun) for every
side; the sides run alternately, round after round (reversed every other round), so
drifts in machine load hit all alike. Prints every round, then each side's median
steps/s and its ratio to DDP. A benchmark: it never asserts a time.

Sides (--sides): disttrain (disttrain.init() as is: the engine negotiates every
collective by name), disttrain-ordered (disttrain.init(ordered=True): the same-order
promise that gloo needs too, so no negotiation), ddp, and local (no communication at all:
the compute-only reference; on a host whose CPUs slow each other down while both compute,
a side that waits part of the time can come out above it), and with
--baseline-build DIR disttrain-baseline (the default side with another build's library).

    /usr/bin/python3 tests/bench/torch_ddp_compare.py [--rounds 5] [--steps 100]
        [--warmup 10] [--model mlp|cnn] [--batch 64] [--np 2] [--sides ...]
        [--profile] [--nice -19] [--bucket-bytes N] [--dt-env VAR=VALUE]
        [--baseline-build DIR]

torch's BLAS is printed: with Debian's default reference BLAS the mlp's matmuls take
~10x longer than with OpenBLAS (`apt-get install libopenblas0-openmp`), which makes
every side's step mostly compute; the figures in bindings/python/README.md give both.

--profile adds the median forward, backward and step times and the CPU time of the
whole process (every thread) per step. On a host shared with other people's builds,
--nice -19 (root) lifts the benchmark's session above them; without it, rounds vary
several-fold and the load average (printed) says how much to trust them.

The build tree is DISTTRAIN_BUILD_DIR (default <repo>/build). Internally the script
re-runs itself under disttrainrun as `--worker SIDE`.
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
SIDES = ["disttrain", "disttrain-ordered", "ddp", "local", "disttrain-baseline"]
LABELS = {"disttrain": "disttrain", "disttrain-ordered": "disttrain ordered",
          "disttrain-baseline": "disttrain (base)",
          "ddp": "ddp (gloo)", "local": "no communication"}
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
    if args.worker.startswith("disttrain"):
        import disttrain.torch as dt
        # disttrain-ordered: the promise DDP and gloo also need (every rank issues the
        # same collectives in the same order) lets the engine skip negotiation.
        dt.init(ordered=args.worker == "disttrain-ordered")
        dt.broadcast_parameters(model.state_dict(), root_rank=0)
        extra = {} if args.bucket_bytes is None else {"bucket_bytes": args.bucket_bytes}
        opt = dt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                      named_parameters=model.named_parameters(), **extra)
        net = model
        barrier = dt.barrier
    elif args.worker == "local":
        # No communication at all: the same two processes each train alone. The
        # ceiling any data-parallel step can reach on this host (compute only).
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                                rank=rank, world_size=size)
        net = model
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        barrier = dist.barrier
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
    if args.worker.startswith("disttrain"):
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
    nice = ["nice", "-n", str(args.nice)] if args.nice else []
    cmd = nice + [str(launcher), "-np", str(args.np), "--timeout", "300", "--",
           "/usr/bin/python3", str(pathlib.Path(__file__).resolve()), "--worker", kind,
           "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--port", str(free_port())]
    if args.profile:
        cmd.append("--profile")
    if args.bucket_bytes is not None:
        cmd += ["--bucket-bytes", str(args.bucket_bytes)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTTRAIN_")}
    build = args.baseline_build if kind == "disttrain-baseline" else BUILD
    env.update(PYTHONPATH=str(REPO / "bindings" / "python"), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1",
               DISTTRAIN_LIBRARY=str(build / "core" / "libdisttrain.so"),
               DISTTRAIN_PLUGIN_PATH=str(build / "plugins" / "transport" / "tcp"))
    if kind.startswith("disttrain"):
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


def shield(nice):
    """nice -n NICE for every side, and the same for this session's autogroup: with
    kernel.sched_autogroup_enabled the scheduler first shares CPUs between sessions, so
    a process's own nice value alone does not lift it above other sessions' builds."""
    try:
        pathlib.Path("/proc/self/autogroup").write_text(str(nice))
        return f"nice {nice} (process and autogroup)"
    except OSError as e:
        return f"nice {nice} (process only; autogroup: {e.strerror})"


def blas_in_use():
    """The BLAS that this process's torch called: Debian's torch links libblas.so.3,
    which the alternatives system (or LD_LIBRARY_PATH) points at an implementation."""
    try:
        libs = {line.split()[-1] for line in open("/proc/self/maps") if "blas" in line}
    except OSError:  # pragma: no cover - not Linux
        return "unknown"
    blas = sorted(lib for lib in libs if pathlib.Path(lib).name.startswith("libblas.so"))
    if any("openblas" in lib for lib in blas):
        return "OpenBLAS"
    if any("/blas/" in lib for lib in blas):
        return ("the reference BLAS (netlib): torch's matmuls run ~10x slower than with "
                "OpenBLAS, so compute hides communication; apt-get install "
                "libopenblas0-openmp for a realistic step")
    return ", ".join(sorted(libs)) or "none found"


def loadavg():
    try:
        return pathlib.Path("/proc/loadavg").read_text().split()[0]
    except OSError:  # pragma: no cover - not Linux
        return "?"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", choices=SIDES)
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
    p.add_argument("--sides", default="disttrain,disttrain-ordered,ddp",
                   help="comma-separated, from " + ", ".join(SIDES) + "; 'local' (no "
                        "communication) is the ceiling any side can reach on this host")
    p.add_argument("--nice", type=int, default=0,
                   help="run every side under nice -n NICE (negative needs root): on a "
                        "host busy with other people's builds it shields all sides alike")
    p.add_argument("--bucket-bytes", type=int, default=None,
                   help="DistributedOptimizer(bucket_bytes=...) (default: its default)")
    p.add_argument("--baseline-build", type=pathlib.Path, default=None, metavar="DIR",
                   help="another build tree (e.g. of the previous commit): adds the side "
                        "disttrain-baseline, the default side with that tree's library")
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
    print(f"torch's BLAS: {blas_in_use()}")
    if args.nice:
        print(f"priority: {shield(args.nice)}")
    print(f"load average at start: {loadavg()}", flush=True)
    kinds = args.sides.split(",")
    if args.baseline_build:
        args.baseline_build = args.baseline_build.resolve()
        if not (args.baseline_build / "core" / "libdisttrain.so").exists():
            sys.exit(f"--baseline-build {args.baseline_build}: no core/libdisttrain.so "
                     f"there; give a configured and built tree")
        if "disttrain-baseline" not in kinds:
            kinds.insert(1, "disttrain-baseline")
    elif "disttrain-baseline" in kinds:
        sys.exit("--sides disttrain-baseline needs --baseline-build DIR")
    if any(k not in SIDES for k in kinds) or "ddp" not in kinds:
        sys.exit(f"--sides {args.sides}: pick from {', '.join(SIDES)}, with ddp")
    results = {k: [] for k in kinds}
    phases = {k: {} for k in kinds}
    for i in range(args.rounds):
        order = kinds if i % 2 == 0 else kinds[::-1]
        for kind in order:
            rate, prof = run_round(kind, args)
            results[kind].append(rate)
            for k, v in prof.items():
                phases[kind].setdefault(k, []).append(v)
        print(f"round {i + 1}: " + ", ".join(f"{k} {results[k][-1]:.1f}" for k in kinds) +
              f" steps/s (load {loadavg()})", flush=True)
    print(f"load average at end: {loadavg()}")
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"{'side':<18} {'steps/s':>8} {'vs ddp':>7}" +
          ("  median ms: forward backward step cpu" if args.profile else ""))
    for k in kinds:
        prof = "".join(f" {statistics.median(v):8.2f}" for v in phases[k].values())
        print(f"{LABELS[k]:<18} {med[k]:8.1f} {med[k] / med['ddp']:6.2f}x {prof}")


if __name__ == "__main__":
    main()

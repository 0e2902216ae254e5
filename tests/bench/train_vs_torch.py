#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Training throughput of disttrain-bench against PyTorch (Debian's build) on the same
model, batch size and thread count, one process each, alternating rounds, medians.

    /usr/bin/python3 tests/bench/train_vs_torch.py --model mlp --batch-size 100 --threads 1
    /usr/bin/python3 tests/bench/train_vs_torch.py --model resnet50 --batch-size 32 --bf16
    /usr/bin/python3 tests/bench/train_vs_torch.py --model resnet50 --bf16 --torch-precision f32
    /usr/bin/python3 tests/bench/train_vs_torch.py --model mlp --optimizer adam

Both sides run the same step: forward, softmax cross-entropy, backward, an optimizer
update (--optimizer, SGD with momentum by default; PyTorch runs its torch.optim class with
its default implementation) on synthetic data. For mlp it also prints the fraction of the sgemm-bound rate reached
(training FLOPs per image x images/sec / oneDNN's sgemm rate on the mlp's shapes, from
tests/bench/compute/compute_sgemm_bench). A benchmark: it prints figures, never asserts.

Besides images/sec (wall clock) both sides report images per CPU-second of their process;
with one thread that is what a quiet machine would give, so it is the figure to compare
when the load average (printed each round) is above ~1.5. DISTTRAIN_BUILD_DIR picks the
build (e.g. one of an older commit, to compare before and after).
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")).resolve()

TORCH_WORKER = r'''
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
model_name, batch, threads, warmup, iters, bf16, optimizer = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1", sys.argv[7]
torch.set_num_threads(threads)
torch.manual_seed(1)

class Bottleneck(nn.Module):
    def __init__(s, cin, width, stride):
        super().__init__()
        out = width * 4
        s.body = nn.Sequential(nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out))
        s.short = (nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                   if cin != out or stride != 1 else nn.Identity())
    def forward(s, x): return F.relu(s.body(x) + s.short(x))

class Basic(nn.Module):
    def __init__(s, cin, out, stride):
        super().__init__()
        s.body = nn.Sequential(nn.Conv2d(cin, out, 3, stride, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU(),
            nn.Conv2d(out, out, 3, 1, 1, bias=False), nn.BatchNorm2d(out))
        s.short = (nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                   if cin != out or stride != 1 else nn.Identity())
    def forward(s, x): return F.relu(s.body(x) + s.short(x))

def build(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 1000), nn.ReLU(), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10)), (1, 28, 28), 10
    if name == "convnet":
        return nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 49, 256), nn.ReLU(), nn.Linear(256, 10)), (1, 28, 28), 10
    if name == "resnet20":
        layers, c = [nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()], 16
        for stage in range(3):
            for b in range(3):
                layers.append(Basic(c, 16 << stage, 2 if stage and not b else 1)); c = 16 << stage
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)), (1, 28, 28), 10
    layers, c = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for stage, blocks in enumerate([3, 4, 6, 3]):
        for b in range(blocks):
            layers.append(Bottleneck(c, 64 << stage, 2 if stage and not b else 1)); c = (64 << stage) * 4
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)), (3, 224, 224), 1000

model, shape, classes = build(model_name)
# The hyperparameters of disttrain-bench's optimizers (lr 0.01, momentum 0.9, no weight
# decay); the update costs the same whatever their values.
opt = {"sgd": lambda p: torch.optim.SGD(p, lr=0.01),
       "momentum": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
       "nesterov": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True),
       "adam": lambda p: torch.optim.Adam(p, lr=0.01),
       "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.0)}[optimizer](model.parameters())
x = torch.randn(batch, *shape)
y = torch.randint(0, classes, (batch,))
rates, cpu_rates = [], []
for i in range(warmup + iters):
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if i >= warmup:
        rates.append(batch / (time.perf_counter() - t0))
        cpu_rates.append(batch / (time.process_time() - c0))
print("images/sec per worker: %.2f" % (sum(rates) / len(rates)))
print("images per CPU-second per worker: %.2f" % (sum(cpu_rates) / len(cpu_rates)))
'''


def env(threads):
    e = dict(os.environ)
    e["DISTTRAIN_PLUGIN_PATH"] = ":".join(
        str(BUILD / "plugins" / p) for p in ("transport/tcp", "compute/onednn"))
    e["DISTTRAIN_THREADS"] = str(threads)
    e["OMP_NUM_THREADS"] = str(threads)
    e.setdefault("DISTTRAIN_LOG_LEVEL", "warn")
    return e


def rate(output):
    """(images/sec, images per CPU-second) from a worker's output."""
    m = re.search(r"images/sec per worker: ([0-9.]+)", output)
    c = re.search(r"images per CPU-second per worker: ([0-9.]+)", output)
    if not m:
        sys.exit(f"no images/sec in the output:\n{output}")
    # An older disttrain-bench prints no CPU-second rate.
    return float(m.group(1)), float(c.group(1)) if c else float("nan")


def run_disttrain(a):
    cmd = [BUILD / "models" / "programs" / "disttrain-bench", "--model", a.model,
           "--batch-size", a.batch_size, "--threads", a.threads, "--num-warmup", a.warmup,
           "--num-iters", a.iters, "--optimizer", a.optimizer] + (["--bf16"] if a.bf16 else [])
    r = subprocess.run([str(c) for c in cmd], env=env(a.threads), capture_output=True,
                       text=True, timeout=3600)
    return rate(r.stdout + r.stderr)


def run_torch(a):
    torch_bf16 = a.bf16 and a.torch_precision == "same"
    cmd = ["/usr/bin/python3", "-c", TORCH_WORKER, a.model, a.batch_size, a.threads,
           a.warmup, a.iters, "1" if torch_bf16 else "0", a.optimizer]
    r = subprocess.run([str(c) for c in cmd], env=env(a.threads), capture_output=True,
                       text=True, timeout=3600)
    return rate(r.stdout + r.stderr)


def sgemm_bound(a):
    """oneDNN sgemm's bound for the mlp as {"wall": (GFLOP/s, images/s), "cpu": (...)}
    ("cpu": per CPU-second, printed with one thread), or None without the benchmark."""
    exe = BUILD / "tests" / "bench" / "compute" / "compute_sgemm_bench"
    if not exe.exists():
        return None
    r = subprocess.run([str(exe), "--threads", str(a.threads), "--batch", str(a.batch_size)],
                       env={**env(a.threads), "DISTTRAIN_PLUGIN_PATH":
                            str(BUILD / "plugins" / "compute" / "onednn")},
                       capture_output=True, text=True, timeout=600)
    out = {}
    m = re.search(r"sgemm ([0-9.]+) GFLOP/s \(([0-9.]+) images/s\)", r.stdout)
    if m:
        out["wall"] = (float(m.group(1)), float(m.group(2)))
    c = re.search(r"per CPU-second: ([0-9.]+) GFLOP/s \(([0-9.]+) images/s\)", r.stdout)
    if c:
        out["cpu"] = (float(c.group(1)), float(c.group(2)))
    return out or None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp",
                   choices=["mlp", "convnet", "resnet20", "resnet50"])
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--optimizer", default="momentum",
                   choices=["sgd", "momentum", "nesterov", "adam", "adamw"],
                   help="the update on both sides (PyTorch: torch.optim.SGD, Adam, AdamW)")
    p.add_argument("--bf16", action="store_true",
                   help="bf16 compute (disttrain --bf16, torch autocast bfloat16)")
    p.add_argument("--torch-precision", choices=["same", "f32"], default="same",
                   help="with --bf16: PyTorch also in bf16 (same, the default) or in its "
                        "default float32 training (f32)")
    a = p.parse_args()

    ours, theirs = [], []
    loads = [load_average()]
    for i in range(a.rounds):
        # Alternate which goes first, so a drift of the machine hits both alike.
        order = [(ours, run_disttrain), (theirs, run_torch)]
        for results, fn in (order if i % 2 == 0 else order[::-1]):
            results.append(fn(a))
        loads.append(load_average())
        print(f"round {i + 1}: disttrain {ours[-1][0]:.1f}  pytorch {theirs[-1][0]:.1f} "
              f"images/sec; per CPU-second {ours[-1][1]:.2f} / {theirs[-1][1]:.2f}; "
              f"load {loads[-1]:.2f}", flush=True)
    mo, mt = (statistics.median(r[0] for r in x) for x in (ours, theirs))
    co, ct = (statistics.median(r[1] for r in x) for x in (ours, theirs))
    precision = ""
    if a.bf16:
        precision = ", bf16" if a.torch_precision == "same" else ", disttrain bf16, PyTorch f32"
    print(f"{a.model}, batch {a.batch_size}, {a.threads} thread(s), {a.optimizer}{precision}: "
          f"disttrain {mo:.1f} images/sec, PyTorch {torch_version()} {mt:.1f} images/sec, "
          f"ratio {mo / mt:.2f}x (medians of {a.rounds} rounds); per CPU-second "
          f"{co:.2f} / {ct:.2f}, ratio {co / ct:.2f}x; load average "
          f"{min(loads):.2f}..{max(loads):.2f}")
    if max(loads) > 1.5:
        print("note: the load average was above 1.5, so wall-clock rates are noise; the "
              "per-CPU-second ratio (single thread) holds up better")
    if a.model == "mlp" and not a.bf16:
        bound = sgemm_bound(a)
        if bound and "wall" in bound:
            g, i = bound["wall"]
            print(f"sgemm-bound limit: {i:.0f} images/sec at {g:.1f} GFLOP/s; "
                  f"disttrain reaches {mo / i:.0%} of it")
        if bound and "cpu" in bound:
            g, i = bound["cpu"]
            print(f"sgemm-bound limit per CPU-second: {i:.0f} images at {g:.1f} GFLOP/s; "
                  f"disttrain reaches {co / i:.0%} of it")


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def torch_version():
    r = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    return r.stdout.strip()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Data-parallel scaling of disttrain-bench: N ranks against 1 rank, and against what
this host gives N independent processes that never communicate.

    /usr/bin/python3 tests/bench/scaling.py --model resnet50 --batch-size 16 --threads 1
    /usr/bin/python3 tests/bench/scaling.py --model mlp --batch-size 100 --rounds 5

Each round runs, in alternating order (so drifts of the machine hit all alike):
  single       disttrainrun -np 1 disttrain-bench ...           (the 1-rank baseline)
  independent  N copies of that job at once, each pinned to its own share of the cores
               with taskset: the same compute with no communication at all
  ranks        disttrainrun -np N disttrain-bench ...           (data-parallel training)
and prints, from the medians of every round's total images/sec:
  ranks / single        the scaling figure (the goal's "2 ranks vs 1 rank")
  independent / single  the host's own ceiling: what N busy cores give at all (shared
                        caches, memory bandwidth and, on virtual machines, the host's
                        scheduling of the vCPUs decide it, not the library)
  ranks / independent   what synchronous data parallelism costs on top of that: gradient
                        communication and every step waiting for the slowest rank

A benchmark: it prints figures, never asserts. DISTTRAIN_BUILD_DIR picks the build.
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
LAUNCHER = BUILD / "core" / "launch" / "disttrainrun"
BENCH = BUILD / "models" / "programs" / "disttrain-bench"
TOTAL = re.compile(r"images/sec total on (\d+) workers: ([0-9.]+)")


EXTRA_ENV = {}  # --env VAR=VALUE, for every side


def env(threads):
    e = {k: v for k, v in os.environ.items() if not k.startswith("DISTTRAIN_")}
    e["DISTTRAIN_PLUGIN_PATH"] = ":".join(
        str(BUILD / "plugins" / p) for p in ("transport/tcp", "compute/onednn"))
    e["OMP_NUM_THREADS"] = str(threads)
    e["DISTTRAIN_LOG_LEVEL"] = os.environ.get("DISTTRAIN_LOG_LEVEL", "warn")
    e.update(EXTRA_ENV)
    return e


def bench_command(a, ranks):
    return [str(LAUNCHER), "-np", str(ranks), "--timeout", "3000", "--",
            str(BENCH), "--model", a.model, "--batch-size", str(a.batch_size),
            "--threads", str(a.threads), "--num-warmup", str(a.warmup),
            "--num-iters", str(a.iters)] + (["--bf16"] if a.bf16 else [])


def total_rate(output, ranks):
    m = TOTAL.search(output)
    if not m or int(m.group(1)) != ranks:
        sys.exit(f"no 'images/sec total on {ranks} workers' in the output:\n{output}")
    return float(m.group(2))


def run_job(a, ranks, extra_env=None):
    e = env(a.threads)
    e.update(extra_env or {})
    r = subprocess.run(bench_command(a, ranks), env=e, capture_output=True, text=True,
                       timeout=3600)
    if r.returncode != 0:
        sys.exit(f"disttrain-bench on {ranks} rank(s) failed ({r.returncode}):\n"
                 f"{r.stdout}\n{r.stderr}")
    return total_rate(r.stdout + r.stderr, ranks)


def core_shares(n):
    """n disjoint CPU lists out of this process's affinity, as disttrainrun's
    --bind-to core would give n ranks (an error if there are fewer CPUs than n)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < n:
        sys.exit(f"--np {n}: only {len(cpus)} CPUs here; independent processes need a "
                 f"core each (lower --np)")
    per = len(cpus) // n
    return [cpus[i * per:(i + 1) * per] for i in range(n)]


def run_independent(a):
    """N one-rank jobs at once, each pinned to its own cores; the sum of their rates."""
    procs = []
    for share in core_shares(a.np):
        cmd = ["taskset", "-c", ",".join(map(str, share))] + bench_command(a, 1)
        procs.append(subprocess.Popen(cmd, env=env(a.threads), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=3600)[0] for p in procs]
    for p, out in zip(procs, outputs):
        if p.returncode != 0:
            sys.exit(f"an independent 1-rank job failed ({p.returncode}):\n{out}")
    return sum(total_rate(out, 1) for out in outputs)


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50",
                   choices=["mlp", "convnet", "resnet20", "resnet50"])
    p.add_argument("--batch-size", type=int, default=16, help="images per rank per step")
    p.add_argument("--threads", type=int, default=1, help="compute threads per rank")
    p.add_argument("--np", type=int, default=2, help="ranks of the data-parallel job")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="extra environment of every run (experiments)")
    p.add_argument("--also", action="append", default=[], metavar="VAR=VALUE",
                   help="adds a side: the N-rank job again with this environment (A/B "
                        "in one run), e.g. --also DISTTRAIN_ORDERED=0")
    a = p.parse_args()
    for kv in a.env + a.also:
        if "=" not in kv:
            p.error(f"{kv!r}: write VAR=VALUE")
    EXTRA_ENV.update(kv.split("=", 1) for kv in a.env)
    also = dict(kv.split("=", 1) for kv in a.also)
    core_shares(a.np)  # fail before the first round, not after it

    print(f"scaling: {a.model}, batch {a.batch_size} per rank, {a.threads} thread(s) per "
          f"rank, {a.np} ranks, {a.rounds} rounds x {a.iters} iterations "
          f"(+{a.warmup} warm-up)" + (f", env {' '.join(a.env)}" if a.env else "") +
          f"; load average {load_average():.2f}", flush=True)
    names = {"single": "1 rank", "independent": f"{a.np} independent",
             "ranks": f"{a.np} ranks"}
    sides = {"single": lambda: run_job(a, 1), "independent": lambda: run_independent(a),
             "ranks": lambda: run_job(a, a.np)}
    if also:
        names["also"] = f"{a.np} ranks with {' '.join(a.also)}"
        sides["also"] = lambda: run_job(a, a.np, also)
    rates = {k: [] for k in sides}
    for i in range(a.rounds):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for k in order:
            rates[k].append(sides[k]())
        print(f"round {i + 1}: " + ", ".join(f"{names[k]} {rates[k][-1]:.1f}" for k in sides)
              + " images/sec; " + ratios({k: v[-1] for k, v in rates.items()}) +
              f" (load {load_average():.2f})", flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print("medians: " + ", ".join(f"{names[k]} {med[k]:.1f}" for k in sides) +
          " images/sec")
    print(f"scaling {a.np} ranks / 1 rank: {med['ranks'] / med['single']:.2f}x; the host's "
          f"ceiling ({a.np} independent / 1): {med['independent'] / med['single']:.2f}x; "
          f"data parallelism's cost (ranks / independent): "
          f"{med['ranks'] / med['independent']:.2f}" +
          (f"; with {' '.join(a.also)}: {med['also'] / med['single']:.2f}x and "
           f"{med['also'] / med['independent']:.2f}" if also else ""))


def ratios(r):
    text = (f"ranks/single {r['ranks'] / r['single']:.2f}x, independent/single "
            f"{r['independent'] / r['single']:.2f}x, ranks/independent "
            f"{r['ranks'] / r['independent']:.2f}")
    if "also" in r:
        text += f", also/independent {r['also'] / r['independent']:.2f}"
    return text

if __name__ == "__main__":
    main()

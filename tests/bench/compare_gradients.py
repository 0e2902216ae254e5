#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A gradient-shaped workload: ResNet-50's 161 tensors (25.6 M float32) allreduced once per
step on N ranks. Alternates, for several rounds, libdisttrain with fusion on (default
DISTTRAIN_FUSION_THRESHOLD), with fusion off (threshold 0), and Open MPI calling one
MPI_Allreduce per tensor; prints the median steps per second of each and the ratios, and
the engine's cost of an empty negotiation cycle (warm cache, nothing to do). Prints
figures, never judges them.

  /usr/bin/python3 tests/bench/compare_gradients.py [--ranks 2] [--rounds 3] [--steps 10]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))}
    env.update(extra)
    return env


def steps_per_s(cmd, env, timeout):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    m = re.search(r"([0-9.]+) steps/s", r.stdout)
    return float(m.group(1)), r.stdout + r.stderr


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", default="10")
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()
    b = a.build_dir
    run = [b / "core/launch/disttrainrun", "-np", str(a.ranks), b / "tests/bench/grad_bench",
           "--steps", a.steps, "--warmup", "2"]
    mpi = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.ranks),
           "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include",
           "lo", b / "tests/bench/mpi_grad_bench", "--steps", a.steps, "--warmup", "2"]
    # TCP against Open MPI over TCP: no shared memory on either side.
    plugin_path = {"DISTTRAIN_PLUGIN_PATH": str(b / "plugins/transport/tcp"),
                   "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_SHM": "0"}
    runs = {
        "disttrain, fusion on": (run, clean_env(plugin_path)),
        "disttrain, fusion off": (run, clean_env({**plugin_path,
                                                  "DISTTRAIN_FUSION_THRESHOLD": "0"})),
        "Open MPI (TCP), one MPI_Allreduce per tensor": (mpi, clean_env({})),
    }
    results = {k: [] for k in runs}
    for _ in range(a.rounds):
        for name, (cmd, env) in runs.items():
            value, _ = steps_per_s([str(c) for c in cmd], env, a.timeout)
            results[name].append(value)
    base = statistics.median(results["Open MPI (TCP), one MPI_Allreduce per tensor"])
    print(f"ResNet-50 gradients, {a.ranks} ranks, median of {a.rounds} alternating rounds")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"  {name:48s} {med:8.2f} steps/s   {med / base:5.2f}x Open MPI   "
              f"(rounds: {', '.join(f'{v:.2f}' for v in values)})")

    idle_env = clean_env({**plugin_path, "DISTTRAIN_CYCLE_TIME_MS": "0",
                          "DISTTRAIN_LOG_LEVEL": "info"})
    _, out = steps_per_s([str(c) for c in run[:4]] + ["--steps", "1", "--warmup", "1",
                                                      "--idle", "2"], idle_env, a.timeout)
    costs = [float(x) for x in re.findall(r"empty negotiation cycles took ([0-9.]+) us", out)]
    if costs:
        print(f"  empty negotiation cycle (cache warm, back to back): "
              f"{statistics.median(costs):.1f} us")


if __name__ == "__main__":
    main()

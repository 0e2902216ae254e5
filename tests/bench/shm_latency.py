# SPDX-License-Identifier: Apache-2.0
"""Small-message allreduce latency on shared memory: libdisttrain against Open MPI, and
optionally against another build of libdisttrain (before/after a change), in one run.

compare_allreduce.py reports the median of a few long runs, which on a busy 2-core host
mostly measures how often the ranks were descheduled. This runs many short rounds, the
programs alternating (disttrain, Open MPI, and the baseline library if given), and
prints per size the median and the 25th percentile over rounds of each: the median is
what a user sees on this host now, the low quartile what the code costs when the ranks
had their cores. A benchmark: it prints figures and never judges them.

  /usr/bin/python3 tests/bench/shm_latency.py --build-dir build
  /usr/bin/python3 tests/bench/shm_latency.py --baseline-lib /tmp/old   # old libdisttrain.so.1 there
"""
import argparse
import os
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_allreduce as ca  # noqa: E402  (shared launch commands and CSV parsing)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", ca.REPO / "build")))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("-b", "--minbytes", default="4")
    p.add_argument("-e", "--maxbytes", default="4K")
    p.add_argument("-f", "--stepfactor", default="4")
    p.add_argument("-n", "--iters", default="2000")
    p.add_argument("-w", "--warmup", default="200")
    p.add_argument("--baseline-lib", type=pathlib.Path,
                   help="folder holding another libdisttrain.so.1: also run disttrain-perf "
                        "with it (LD_LIBRARY_PATH), alternating with the others")
    p.add_argument("--dt-env", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--nice", type=int, default=0)
    p.add_argument("--rt", type=int, default=0,
                   help="run every program under chrt -f RT (SCHED_FIFO; needs root): the "
                        "ranks then keep their cores on a busy host")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    # What compare_allreduce.commands() reads; no memory-bandwidth floor at these sizes.
    a.transport, a.bind, a.bound = "tcp", 1, 0
    return a


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def main():
    a = parse_args()
    cmds = ca.commands(a, a.ranks, "shm")
    if a.baseline_lib:
        dt_cmd, dt_env = cmds["disttrain"]
        env = dict(dt_env, LD_LIBRARY_PATH=str(a.baseline_lib.resolve()))
        cmds["baseline"] = (dt_cmd, env)
    names = list(cmds)
    times = {n: {} for n in names}  # name -> size -> [time_us per round]
    print(f"# shm_latency: {' '.join(sys.argv[1:]) or '(defaults)'}; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f} at start")
    failures = 0
    for rnd in range(a.rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for name in order:
            rows = ca.run_once(name, *cmds[name], a.timeout)
            if rows is None:
                failures += 1
                continue
            for size, (t, _, wrong) in rows.items():
                failures += wrong != 0
                times[name].setdefault(size, []).append(t)
    print(f"# load {os.getloadavg()[0]:.1f} at end; time per call in us over {a.rounds} "
          f"rounds: median / 25th percentile")
    head = "".join(f" {n + ' p50':>13} {n + ' p25':>13}" for n in names)
    print(f"# {'size':>6}{head} {'dt/mpi p50':>11} {'dt/mpi p25':>11}")
    for size in sorted(times["disttrain"]):
        cells, stats = "", {}
        for n in names:
            v = times[n].get(size, [])
            stats[n] = (statistics.median(v), quantile(v, 0.25)) if v else (float("nan"),) * 2
            cells += f" {stats[n][0]:13.2f} {stats[n][1]:13.2f}"
        r50 = stats["disttrain"][0] / stats["mpi"][0]
        r25 = stats["disttrain"][1] / stats["mpi"][1]
        print(f"  {ca.human(size):>6}{cells} {r50:11.2f} {r25:11.2f}", flush=True)
    if failures:
        print(f"# {failures} failed runs or wrong values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

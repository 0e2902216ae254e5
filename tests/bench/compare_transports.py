#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Allreduce over each libdisttrain transport (tcp, ucx, mpi) next to Open MPI's own
MPI_Allreduce, same sizes and flags, alternating rounds; prints the median per size and
the ratios the issue asks for (mpi plugin over raw MPI, ucx against tcp). A benchmark: it
never judges the figures; it exits non-zero only when a run failed or gave wrong values.

tcp and ucx run under disttrainrun, mpi and raw MPI under mpirun (Open MPI defaults: the
same shared-memory path for both). DISTTRAIN_SHM=0, so the core's own shared-memory path
does not stand in for the transport being measured (the mpi plugin's native collectives
come first anyway).

  /usr/bin/python3 tests/bench/compare_transports.py --build-dir build
  /usr/bin/python3 tests/bench/compare_transports.py --transports mpi --rounds 3 -e 16M
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--transports", default="tcp,ucx,mpi",
                   help="comma-separated disttrain transports (default tcp,ucx,mpi)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("-b", "--minbytes", default="4")
    p.add_argument("-e", "--maxbytes", default="64M")
    p.add_argument("-f", "--stepfactor", default="4")
    p.add_argument("-n", "--iters", default="20")
    p.add_argument("-w", "--warmup", default="5")
    p.add_argument("-O", "--ordered", default="1",
                   help="disttrain-perf --ordered (1: no negotiation, as MPI; 0: negotiate)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", type=pathlib.Path)
    return p.parse_args()


def flags(a):
    return ["-b", a.minbytes, "-e", a.maxbytes, "-f", a.stepfactor, "-n", a.iters,
            "-w", a.warmup, "-d", "float", "-o", "sum", "-c", "allreduce", "--csv"]


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))}
    env.update(extra)
    return env


def commands(a):
    b = a.build_dir.resolve()
    perf = b / "models" / "tools" / "disttrain-perf"
    launcher = b / "core" / "launch" / "disttrainrun"
    raw = b / "tests" / "bench" / "mpi_allreduce_bench"
    for path in (perf, launcher, raw):
        if not path.exists():
            sys.exit(f"compare_transports: {path} is missing; build it first (ninja -C {b})")
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.ranks)]
    cmds = {}
    for t in a.transports.split(","):
        plugin = b / "plugins" / "transport" / t / f"libdt-transport-{t}.so"
        if not plugin.exists():
            print(f"# transport {t}: not built ({plugin}), left out", file=sys.stderr)
            continue
        env = clean_env({"DISTTRAIN_TRANSPORT": t, "DISTTRAIN_PLUGIN_PATH": str(plugin.parent),
                         "DISTTRAIN_SHM": "0"})
        perf_cmd = [str(perf)] + flags(a) + ["-O", a.ordered]
        if t == "mpi":
            cmds[t] = (mpirun + perf_cmd, env)
        else:
            cmds[t] = ([str(launcher), "-np", str(a.ranks), "--no-tag-output", "--"] + perf_cmd,
                       env)
    cmds["MPI_Allreduce"] = (mpirun + [str(raw)] + flags(a), clean_env({}))
    return cmds


def run_once(name, cmd, env, timeout):
    """{size: (time_us, busbw_GBps, wrong)} or None after a failure (reported)."""
    try:
        proc = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        print(f"  {name}: timed out after {timeout:.0f} s", file=sys.stderr)
        return None
    rows = {}
    for line in proc.stdout.splitlines():
        f = line.strip().split(",")
        if line.startswith("#") or len(f) != 10 or f[0] == "collective":
            continue
        try:
            rows[int(f[1])] = (float(f[6]), float(f[8]), int(f[9]))
        except ValueError:
            continue
    if proc.returncode != 0 or not rows:
        print(f"  {name}: exit {proc.returncode}, {len(rows)} rows\n"
              f"{(proc.stdout + proc.stderr)[-2000:]}", file=sys.stderr)
        return None
    return rows


def median_rows(rounds):
    sizes = sorted(set().union(*[r.keys() for r in rounds])) if rounds else []
    return {s: (statistics.median(r[s][0] for r in rounds if s in r),
                statistics.median(r[s][1] for r in rounds if s in r),
                max(r[s][2] for r in rounds if s in r)) for s in sizes}


def human(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def main():
    a = parse_args()
    cmds = commands(a)
    print(f"# compare_transports: {' '.join(sys.argv[1:]) or '(defaults)'}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
    results = {n: [] for n in cmds}
    failures = 0
    for rnd in range(a.rounds):
        names = list(cmds) if rnd % 2 == 0 else list(reversed(cmds))
        for name in names:
            print(f"round {rnd + 1}/{a.rounds}: {name}", file=sys.stderr, flush=True)
            rows = run_once(name, *cmds[name], a.timeout)
            if rows is None:
                failures += 1
            else:
                results[name].append(rows)
    med = {n: median_rows(r) for n, r in results.items()}
    names = list(cmds)
    sizes = sorted(set().union(*[m.keys() for m in med.values()]))
    print(f"# allreduce float32 sum, {a.ranks} ranks, time per call in us (median of "
          f"{a.rounds} rounds); ratios are times")
    head = "".join(f"{n:>15}" for n in names)
    extra = []
    if "mpi" in med and "MPI_Allreduce" in med:
        extra.append(("mpi/MPI", "mpi", "MPI_Allreduce"))
    if "ucx" in med and "tcp" in med:
        extra.append(("ucx/tcp", "ucx", "tcp"))
    print(f"# {'size':>8}{head}" + "".join(f"{e[0]:>10}" for e in extra))
    wrong = 0
    table = []
    for s in sizes:
        cells, row = "", {"size": s}
        for n in names:
            v = med[n].get(s)
            cells += f"{v[0]:15.1f}" if v else f"{'-':>15}"
            row[n + "_us"] = v and v[0]
            wrong += v[2] if v else 0
        for label, x, y in extra:
            vx, vy = med[x].get(s), med[y].get(s)
            r = vx[0] / vy[0] if vx and vy and vy[0] > 0 else float("nan")
            cells += f"{r:10.2f}"
            row[label] = r
        print(f"  {human(s):>8}{cells}", flush=True)
        table.append(row)
    if a.json:
        a.json.write_text(json.dumps(table, indent=1))
    if failures or wrong:
        print(f"# {failures} failed runs, {wrong} wrong values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

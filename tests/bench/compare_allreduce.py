#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Allreduce: libdisttrain (disttrain-perf under disttrainrun) against Open MPI
(mpi_allreduce_bench under mpirun), same sizes, dtype, op and rotating buffers.

Two pairings, each for every rank count asked for:
  shm  disttrain with shared memory between local ranks (DISTTRAIN_SHM=1)
       vs Open MPI's defaults (shared memory, the vader/sm BTL)
  tcp  disttrain over its TCP transport only (DISTTRAIN_SHM=0)
       vs Open MPI over TCP only (--mca btl tcp,self)

Within a pairing the two programs run alternately for several rounds, so that a slow
phase of the machine hits both alike, and the table shows the median over rounds of each
and their ratios per size (busbw dt/mpi > 1: disttrain moves more; time dt/mpi < 1:
disttrain is faster). Builds nothing: point --build-dir at a build tree that has both
programs. A benchmark: it prints figures and never judges them; it exits non-zero only
when a program failed or gave wrong results.

  /usr/bin/python3 tests/bench/compare_allreduce.py                 # 2 and 4 ranks, shm and tcp
  /usr/bin/python3 tests/bench/compare_allreduce.py --ranks 2 --paths shm -b 64K
  /usr/bin/python3 tests/bench/compare_allreduce.py --ranks 2 --paths tcp -n 2000 -w 500

The default 20 timed iterations per size (-n) mostly time connections settling on some
hosts (plugins/transport/tcp/README.md, the PVM host): for steady-state figures over TCP
raise -n and -w as in the last line; --rt keeps shared-memory figures repeatable but
starves the kernel's softirq thread that delivers TCP loopback traffic, so leave it off
for tcp.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

# Per pairing: disttrain's environment, Open MPI's transport flags.
PATHS = {
    "shm": ({"DISTTRAIN_SHM": "1"}, []),
    "tcp": ({"DISTTRAIN_SHM": "0"},
            ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
             "--mca", "btl_tcp_if_include", "lo"]),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--ranks", default="2,4", help="comma-separated rank counts (2..4)")
    p.add_argument("--paths", default="shm,tcp", help="comma-separated: shm, tcp")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (median)")
    p.add_argument("-b", "--minbytes", default="4")
    p.add_argument("-e", "--maxbytes", default="64M")
    p.add_argument("-f", "--stepfactor", default="4")
    p.add_argument("-n", "--iters", default="20")
    p.add_argument("-w", "--warmup", default="5")
    p.add_argument("--transport", default="tcp", help="DISTTRAIN_TRANSPORT (default tcp)")
    p.add_argument("--dt-env", action="append", default=[], metavar="VAR=VALUE",
                   help="extra variable for disttrain's runs (e.g. DISTTRAIN_SHM_SLICE=131072)")
    p.add_argument("--bind", type=int, default=1,
                   help="1 (default): pin disttrain's rank i to CPU i when the ranks fit the "
                        "CPUs, as mpirun binds its ranks to cores by default; 0: let the "
                        "scheduler place them")
    p.add_argument("--nice", type=int, default=0,
                   help="run both programs under nice -n NICE (negative needs root): on a "
                        "busy shared host it shields both alike from the other load")
    p.add_argument("--rt", type=int, default=0, metavar="PRIO",
                   help="run both programs under chrt -f PRIO (SCHED_FIFO; needs root): on a "
                        "host busy with builds, where --nice still leaves 2-10x run-to-run "
                        "spread, this keeps the ranks on their CPUs; the kernel's RT "
                        "throttling still leaves 5%% of each CPU to the rest")
    p.add_argument("--bound", type=int, default=1,
                   help="1 (default): on the shm pairing, also time one memcpy of each size "
                        "per rank, all ranks at once (copy_bound.py), alternating with the "
                        "programs: the memory-bandwidth floor of an allreduce, printed from "
                        "64 KiB as 'copy us' and 'dt/bound' (disttrain's busbw over the "
                        "busbw one copy's time would give); 0: not")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("--json", type=pathlib.Path, help="also write the tables here")
    a = p.parse_args()
    a.ranks = [int(r) for r in a.ranks.split(",")]
    a.paths = a.paths.split(",")
    for r in a.ranks:
        if r not in (2, 3, 4):
            p.error(f"--ranks: {r} is not 2, 3 or 4")
    for path in a.paths:
        if path not in PATHS:
            p.error(f"--paths: '{path}' is not one of {', '.join(PATHS)}")
    return a


def bench_flags(a):
    return ["-b", a.minbytes, "-e", a.maxbytes, "-f", a.stepfactor, "-n", a.iters,
            "-w", a.warmup, "-d", "float", "-o", "sum", "-c", "allreduce", "--csv"]


def clean_env(extra):
    """No inherited launcher variables: each tool must find its ranks its own way."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))}
    env.update(extra)
    return env


def commands(a, ranks, path):
    build = a.build_dir.resolve()
    perf = build / "models" / "tools" / "disttrain-perf"
    launcher = build / "core" / "launch" / "disttrainrun"
    mpi_bench = build / "tests" / "bench" / "mpi_allreduce_bench"
    for exe in (perf, launcher, mpi_bench):
        if not exe.exists():
            sys.exit(f"compare_allreduce: {exe} is missing; build it first "
                     f"(ninja -C {build})")
    dt_extra, mpi_flags = PATHS[path]
    plugin_dir = build / "plugins" / "transport" / a.transport
    program = [str(perf)] + bench_flags(a)
    if a.bind and ranks <= (os.cpu_count() or 1):
        # Open MPI binds each rank to a core unless oversubscribed: do the same, or the
        # scheduler may stack both ranks on one core (futex wake-ups pull them together).
        program = ["sh", "-c", 'exec taskset -c "$DISTTRAIN_LOCAL_RANK" "$0" "$@"'] + program
    dt_cmd = [str(launcher), "-np", str(ranks), "--no-tag-output",
              "--timeout", str(int(a.timeout)), "--"] + program
    dt_env = clean_env({"DISTTRAIN_TRANSPORT": a.transport,
                        "DISTTRAIN_PLUGIN_PATH": str(plugin_dir), **dt_extra,
                        **dict(kv.split("=", 1) for kv in a.dt_env)})
    mpi_cmd = (["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] +
               mpi_flags + [str(mpi_bench)] + bench_flags(a))
    if a.nice:
        dt_cmd = ["nice", "-n", str(a.nice)] + dt_cmd
        mpi_cmd = ["nice", "-n", str(a.nice)] + mpi_cmd
    if a.rt:
        dt_cmd = ["chrt", "-f", str(a.rt)] + dt_cmd
        mpi_cmd = ["chrt", "-f", str(a.rt)] + mpi_cmd
    cmds = {"disttrain": (dt_cmd, dt_env), "mpi": (mpi_cmd, clean_env({}))}
    if a.bound and path == "shm" and parse_size(a.maxbytes) >= BOUND_FROM:
        bound_cmd = [sys.executable, str(pathlib.Path(__file__).with_name("copy_bound.py")),
                     "--ranks", str(ranks), "-b", str(max(parse_size(a.minbytes), BOUND_FROM)),
                     "-e", a.maxbytes, "-f", a.stepfactor, "-n", a.iters, "-w", a.warmup]
        if a.rt:
            bound_cmd = ["chrt", "-f", str(a.rt)] + bound_cmd
        cmds["bound"] = (bound_cmd, clean_env({}))
    return cmds


# Below this the bound's Python loop costs more than the copy.
BOUND_FROM = 64 * 1024


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = str(text).strip().upper()
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def run_once(name, cmd, env, timeout):
    """Returns {size: (time_us, busbw, wrong)}, or None after a failure (reported)."""
    try:
        proc = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        print(f"  {name}: timed out after {timeout:.0f} s", file=sys.stderr)
        return None
    rows = {}
    for line in proc.stdout.splitlines():
        fields = line.strip().split(",")
        if line.startswith("#") or len(fields) != 10 or fields[0] == "collective":
            continue
        try:
            rows[int(fields[1])] = (float(fields[6]), float(fields[8]), int(fields[9]))
        except ValueError:
            continue
    if proc.returncode != 0 or not rows:
        print(f"  {name}: exit {proc.returncode}, {len(rows)} rows\n"
              f"{(proc.stdout + proc.stderr)[-2000:]}", file=sys.stderr)
        return None
    return rows


def median_rows(rounds):
    sizes = sorted(set().union(*[r.keys() for r in rounds])) if rounds else []
    out = {}
    for size in sizes:
        samples = [r[size] for r in rounds if size in r]
        out[size] = (statistics.median(s[0] for s in samples),
                     statistics.median(s[1] for s in samples),
                     max(s[2] for s in samples))
    return out


def human(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def bound_columns(b, d):
    """'copy us' and 'dt/bound' of a size the bound was timed at, else nothing."""
    if not b:
        return ""
    ratio = d[1] / b[1] if d and b[1] > 0 else float("nan")
    return f" {b[0]:10.1f} {ratio:9.2f}"


def compare(a, ranks, path):
    """Runs one pairing; prints its table; returns (rows, failures, wrong values)."""
    cmds = commands(a, ranks, path)
    results = {name: [] for name in cmds}
    failures = 0
    for rnd in range(a.rounds):
        # Alternate which goes first, so neither always runs on a "warmer" machine.
        order = list(cmds) if rnd % 2 == 0 else list(reversed(cmds))
        for name in order:
            print(f"{path} {ranks} ranks, round {rnd + 1}/{a.rounds}: {name}",
                  file=sys.stderr, flush=True)
            rows = run_once(name, *cmds[name], a.timeout)
            if rows is None:
                failures += 1
            else:
                results[name].append(rows)
    dt, mpi = median_rows(results["disttrain"]), median_rows(results["mpi"])
    bound = median_rows(results.get("bound", []))
    mpi_name = "Open MPI default (shared memory)" if path == "shm" else "Open MPI btl tcp,self"
    dt_name = "disttrain shm" if path == "shm" else "disttrain tcp (DISTTRAIN_SHM=0)"
    print(f"\n# allreduce float32 sum, {ranks} ranks: {dt_name} vs {mpi_name}; median of "
          f"{len(results['disttrain'])}/{len(results['mpi'])} rounds, busbw in GB/s")
    print(f"# {'size':>8} {'dt us':>10} {'dt busbw':>9} {'mpi us':>10} {'mpi busbw':>10} "
          f"{'busbw dt/mpi':>13} {'time dt/mpi':>12}" +
          (f" {'copy us':>10} {'dt/bound':>9}" if bound else ""))
    table = []
    wrong = 0
    for size in sorted(set(dt) | set(mpi)):
        d, m = dt.get(size), mpi.get(size)
        t_ratio = d[0] / m[0] if d and m and m[0] > 0 else float("nan")
        b_ratio = d[1] / m[1] if d and m and m[1] > 0 else float("nan")
        wrong += (d[2] if d else 0) + (m[2] if m else 0)
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"  {human(size):>8} {fmt(d and d[0], '10.1f'):>10} {fmt(d and d[1], '9.3f'):>9} "
              f"{fmt(m and m[0], '10.1f'):>10} {fmt(m and m[1], '10.3f'):>10} "
              f"{b_ratio:13.2f} {t_ratio:12.2f}" + bound_columns(bound.get(size), d),
              flush=True)
        table.append({"size": size, "disttrain_time_us": d and d[0],
                      "disttrain_busbw_gbps": d and d[1], "mpi_time_us": m and m[0],
                      "mpi_busbw_gbps": m and m[1], "busbw_ratio": b_ratio,
                      "time_ratio": t_ratio,
                      "copy_time_us": bound[size][0] if size in bound else None})
    return table, failures, wrong


def main():
    a = parse_args()
    print(f"# compare_allreduce: {' '.join(sys.argv[1:]) or '(defaults)'}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
    tables, failures, wrong = [], 0, 0
    for ranks in a.ranks:
        for path in a.paths:
            rows, f, w = compare(a, ranks, path)
            failures += f
            wrong += w
            tables.append({"ranks": ranks, "path": path, "transport": a.transport,
                           "rows": rows})
    if a.json:
        a.json.write_text(json.dumps(tables, indent=1))
    if failures or wrong:
        print(f"# {failures} failed runs, {wrong} wrong values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

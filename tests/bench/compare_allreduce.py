#!/usr/bin/python3
"""Allreduce: libdisttrain (disttrain-perf under disttrainrun) against Open MPI
(mpi_allreduce_bench under mpirun), same sizes, dtype, op and rotating buffers.

The two run alternately for several rounds, so that a slow phase of the machine hits
both alike, and the table shows the median over rounds of each. Builds nothing: point
--build-dir at a build tree that has both programs. A benchmark: it prints figures and
never judges them; it exits non-zero only when a program failed or gave wrong results.

  /usr/bin/python3 tests/bench/compare_allreduce.py                    # 2 ranks, TCP vs MPI/TCP
  /usr/bin/python3 tests/bench/compare_allreduce.py --ranks 4 --mpi-transport shm
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

# Open MPI transports: TCP over loopback only (the same path disttrain's tcp plugin
# takes), or Open MPI's defaults, which use shared memory between local ranks.
MPI_TRANSPORTS = {
    "tcp": ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", "lo"],
    "shm": [],
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--ranks", type=int, default=2, choices=[2, 3, 4])
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (median)")
    p.add_argument("-b", "--minbytes", default="4")
    p.add_argument("-e", "--maxbytes", default="64M")
    p.add_argument("-f", "--stepfactor", default="4")
    p.add_argument("-n", "--iters", default="20")
    p.add_argument("-w", "--warmup", default="5")
    p.add_argument("--transport", default="tcp", help="DISTTRAIN_TRANSPORT (default tcp)")
    p.add_argument("--mpi-transport", default="tcp", choices=sorted(MPI_TRANSPORTS))
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("--json", type=pathlib.Path, help="also write the table here")
    return p.parse_args()


def bench_flags(a):
    return ["-b", a.minbytes, "-e", a.maxbytes, "-f", a.stepfactor, "-n", a.iters,
            "-w", a.warmup, "-d", "float", "-o", "sum", "-c", "allreduce", "--csv"]


def clean_env(extra):
    """No inherited launcher variables: each tool must find its ranks its own way."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))}
    env.update(extra)
    return env


def commands(a):
    build = a.build_dir.resolve()
    perf = build / "models" / "tools" / "disttrain-perf"
    launcher = build / "core" / "launch" / "disttrainrun"
    mpi_bench = build / "tests" / "bench" / "mpi_allreduce_bench"
    for path in (perf, launcher, mpi_bench):
        if not path.exists():
            sys.exit(f"compare_allreduce: {path} is missing; build it first "
                     f"(ninja -C {build})")
    plugin_dir = build / "plugins" / "transport" / a.transport
    dt_cmd = [str(launcher), "-np", str(a.ranks), "--no-tag-output",
              "--timeout", str(int(a.timeout)), "--", str(perf)] + bench_flags(a)
    dt_env = clean_env({"DISTTRAIN_TRANSPORT": a.transport,
                        "DISTTRAIN_PLUGIN_PATH": str(plugin_dir)})
    mpi_cmd = (["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.ranks)] +
               MPI_TRANSPORTS[a.mpi_transport] + [str(mpi_bench)] + bench_flags(a))
    return {"disttrain": (dt_cmd, dt_env), "mpi": (mpi_cmd, clean_env({}))}


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


def main():
    a = parse_args()
    cmds = commands(a)
    results = {name: [] for name in cmds}
    failures = 0
    for rnd in range(a.rounds):
        # Alternate which goes first, so neither always runs on a "warmer" machine.
        order = list(cmds) if rnd % 2 == 0 else list(reversed(cmds))
        for name in order:
            print(f"round {rnd + 1}/{a.rounds}: {name}", file=sys.stderr, flush=True)
            rows = run_once(name, *cmds[name], a.timeout)
            if rows is None:
                failures += 1
            else:
                results[name].append(rows)
    dt, mpi = median_rows(results["disttrain"]), median_rows(results["mpi"])

    print(f"# allreduce float32 sum, {a.ranks} ranks, median of "
          f"{len(results['disttrain'])}/{len(results['mpi'])} rounds; "
          f"disttrain transport {a.transport}, Open MPI {a.mpi_transport}")
    print(f"# {'size':>8} {'dt time(us)':>12} {'dt busbw':>9} {'mpi time(us)':>13} "
          f"{'mpi busbw':>10} {'time dt/mpi':>12}")
    table = []
    wrong = 0
    for size in sorted(set(dt) | set(mpi)):
        d, m = dt.get(size), mpi.get(size)
        ratio = d[0] / m[0] if d and m and m[0] > 0 else float("nan")
        wrong += (d[2] if d else 0) + (m[2] if m else 0)
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"  {human(size):>8} {fmt(d and d[0], '12.1f'):>12} {fmt(d and d[1], '9.3f'):>9} "
              f"{fmt(m and m[0], '13.1f'):>13} {fmt(m and m[1], '10.3f'):>10} {ratio:12.2f}")
        table.append({"size": size, "disttrain_time_us": d and d[0],
                      "disttrain_busbw_gbps": d and d[1], "mpi_time_us": m and m[0],
                      "mpi_busbw_gbps": m and m[1], "time_ratio": ratio})
    if a.json:
        a.json.write_text(json.dumps({"ranks": a.ranks, "transport": a.transport,
                                      "mpi_transport": a.mpi_transport, "rows": table},
                                     indent=1))
    if failures or wrong:
        print(f"# {failures} failed runs, {wrong} wrong values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

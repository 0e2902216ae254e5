#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How long an elastic job takes to recover from losing ranks: N trials of each scenario,
each a `disttrainrun --elastic` job of 4 local ranks running dt_elastic_worker (an
allreduce a step, 10 ms apart; the victims SIGKILL themselves at step 3). Per scenario
it prints the median and largest recovery time (from the first kill to the last
survivor's first completed allreduce after the last re-form; with a replacement, after
the re-form that lets it in), the commits lost (steps some rank had completed that the
re-formed job ran again), the trials that failed (a non-zero exit or a survivor without
"done"; a kill during the re-form may fail cleanly by design) and the hangs (a trial past
--deadline, then killed). A benchmark: it prints figures and judges no time.

  /usr/bin/python3 tests/bench/elastic_recovery.py --build-dir build --trials 20
  /usr/bin/python3 tests/bench/elastic_recovery.py --scenarios one,rank0 --trials 3 -v
"""
import argparse
import os
import pathlib
import re
import signal
import statistics
import subprocess
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
RANKS = 4
STEPS = 30

# name: (victims, extra disttrainrun arguments, extra environment, what it is)
SCENARIOS = {
    "one": ([2], [], {}, "one rank killed"),
    "rank0": ([0], [], {}, "rank 0 killed"),
    "two": ([1, 3], [], {}, "two ranks killed at once"),
    "in-reform": ([1], [], {"DT_WORKER_DIE_IN_REFORM": "3"},
                  "a second rank killed during the re-form"),
    "replacement": ([1], ["--max-restarts", "1"], {}, "one killed, a replacement joins"),
}

TAGGED = re.compile(r"^\[(\d+)\] (.*)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--trials", type=int, default=20, help="trials per scenario (default 20)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma-separated, of: " + ", ".join(SCENARIOS))
    p.add_argument("--deadline", type=float, default=60.0,
                   help="seconds after which a trial counts as a hang and is killed")
    p.add_argument("--timeout", type=int, default=10,
                   help="DISTTRAIN_TIMEOUT of the ranks (default 10 s)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the output of each trial that failed or hung")
    a = p.parse_args()
    unknown = [s for s in a.scenarios.split(",") if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if a.trials < 1:
        p.error("--trials needs at least 1")
    return a


def job_env(extra, timeout_s, build):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTTRAIN_")}
    env.update({"DISTTRAIN_TIMEOUT": str(timeout_s),
                "DISTTRAIN_PLUGIN_PATH": str(build / "plugins" / "transport" / "tcp")})
    env.update(extra)
    return env


def run_trial(build, scenario, deadline_s, timeout_s):
    """One job. Returns a dict: recovery (s or None), lost, failed, hung, output."""
    victims, args, extra, _ = SCENARIOS[scenario]
    cmd = [str(build / "core" / "launch" / "disttrainrun"), "-np", str(RANKS), "--elastic",
           *args, str(build / "tests" / "integration" / "dt_elastic_worker"), str(STEPS),
           *map(str, victims)]
    p = subprocess.Popen(cmd, env=job_env(extra, timeout_s, build), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    hung = False
    try:
        out, err = p.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    kills, recovered, lost, done = [], [], 0, set()
    for line in out.splitlines():
        m = TAGGED.match(line)
        if not m:
            continue
        tag, text = int(m.group(1)), m.group(2)
        if k := re.match(r"killing t_ms=([\d.]+)", text):
            kills.append(float(k.group(1)))
        elif r := re.match(r"recovered t_ms=([\d.]+) size=(\d+)", text):
            recovered.append((float(r.group(1)), int(r.group(2))))
        elif s := re.match(r"resumed from_step=(\d+) step=(\d+)", text):
            lost = max(lost, int(s.group(1)) - int(s.group(2)))
        elif text.startswith("done "):
            done.add(tag)
    if scenario == "replacement":
        recovered = [r for r in recovered if r[1] == RANKS]
    recovery = None
    if kills and recovered:
        recovery = (max(t for t, _ in recovered) - min(kills)) / 1000.0
    expected_done = RANKS if scenario == "replacement" else RANKS - len(victims) - (
        1 if "DT_WORKER_DIE_IN_REFORM" in extra else 0)
    failed = hung or p.returncode != 0 or len(done) != expected_done
    return {"recovery": recovery, "lost": lost, "failed": failed, "hung": hung,
            "output": f"$ {' '.join(cmd)}\n{out}{err}"}


def fmt(seconds):
    return f"{seconds:8.3f}" if seconds is not None else "       -"


def main():
    a = parse_args()
    build = a.build_dir.resolve()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"# {RANKS} local ranks, {STEPS} steps, {a.trials} trial(s) per scenario, "
          f"DISTTRAIN_TIMEOUT={a.timeout}, load average before: {load}")
    header = (f"{'scenario':12} {'trials':>6} {'median s':>8} {'max s':>8} {'lost':>5} "
              f"{'failed':>6} {'hangs':>5}  what")
    print(header)
    print("-" * len(header))
    for scenario in a.scenarios.split(","):
        times, lost, failed, hangs = [], 0, 0, 0
        for _ in range(a.trials):
            t = run_trial(build, scenario, a.deadline, a.timeout)
            if t["recovery"] is not None and not t["hung"]:
                times.append(t["recovery"])
            lost += t["lost"]
            failed += t["failed"]
            hangs += t["hung"]
            if a.verbose and (t["failed"] or t["hung"]):
                print(t["output"][-4000:])
        median = statistics.median(times) if times else None
        print(f"{scenario:12} {a.trials:>6} {fmt(median)} {fmt(max(times) if times else None)} "
              f"{lost:>5} {failed:>6} {hangs:>5}  {SCENARIOS[scenario][3]}", flush=True)
    with open("/proc/loadavg") as f:
        print(f"# load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()

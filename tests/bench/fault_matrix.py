#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How the survivors of a lost rank fare, per transport x mode x shared memory x signal:
N trials each of 4 ranks in a loop of allreduces, one of them SIGKILLed or SIGSTOPped at
a varied iteration (tests/integration/fault_cases.py runs a trial). Prints one row per
case: the median and the largest time from the victim's signal to a survivor's error,
and in how many trials something went wrong (a survivor silent, with the wrong error,
crashed or ended by a signal, a job that did not end by itself, processes left behind).
Under mpirun a kill ends the whole job (mpirun's teardown), so there the times are those
of the survivors that reported before it. A benchmark: it prints figures and judges no
time; test_fault_matrix.py holds the bounds.

  /usr/bin/python3 tests/bench/fault_matrix.py --build-dir build --trials 5
  /usr/bin/python3 tests/bench/fault_matrix.py --transports tcp --signals kill -v
"""
import argparse
import os
import pathlib
import statistics
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
import fault_cases as fc  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--trials", type=int, default=5, help="trials per case (default 5)")
    p.add_argument("--transports", default=",".join(fc.TRANSPORTS))
    p.add_argument("--modes", default=",".join(fc.MODES))
    p.add_argument("--shm", default=",".join(fc.SHM))
    p.add_argument("--signals", default=",".join(fc.SIGNALS))
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each failed trial's problems as it ends")
    return p.parse_args()


def fmt(seconds):
    return f"{seconds:6.3f}" if seconds is not None else "     -"


def main():
    a = parse_args()
    build = a.build_dir.resolve()
    header = (f"{'transport':9} {'mode':10} {'shm':4} {'signal':6} {'trials':>6} "
              f"{'median s':>8} {'max s':>6} {'silent':>6} {'wrong':>5} {'crashed':>7} "
              f"{'left':>4} {'hung':>4} {'failed':>6}")
    print(header)
    print("-" * len(header))
    index = 0
    for transport in a.transports.split(","):
        if not fc.plugin_built(build, transport):
            print(f"# {transport}: not built ({fc.plugin_dir(build, transport)}), left out")
            continue
        for mode in a.modes.split(","):
            for shm in a.shm.split(","):
                for sig in a.signals.split(","):
                    trials = []
                    for _ in range(a.trials):
                        victim, at = fc.moment(index)
                        index += 1
                        t = fc.run_trial(build, transport, mode, shm, sig, victim, at)
                        trials.append(t)
                        if a.verbose and t.problems():
                            print(f"# {transport} {mode} {shm} {sig} rank {victim} at "
                                  f"{at}: " + "; ".join(t.problems()), flush=True)
                    print(row(transport, mode, shm, sig, trials), flush=True)
    print("\nseconds: from the victim's signal to each survivor's error (CLOCK_MONOTONIC "
          "of both); silent: survivors with no error; wrong: errors other than "
          "DT_ERR_PEER_LOST naming the victim (kill) or DT_ERR_TIMEOUT/PEER_LOST (stop); "
          "crashed: survivors that died by a signal; left: processes alive after the "
          "launcher returned; hung: trials that did not end by themselves (disttrainrun "
          "--timeout or the hard limit ended them); failed: trials with any problem, the "
          "time bounds included")


def row(transport, mode, shm, sig, trials):
    delays = [d for t in trials for d in t.delays.values()]
    silent = sum(len(set(t.survivors) - set(t.errors)) for t in trials
                 if t.victim_clock is not None)
    wrong = sum(1 for t in trials for p in t.problems() if "expected DT_ERR" in p)
    crashed = sum(len(t.crashed) for t in trials)
    left = sum(len(t.leftovers) for t in trials)
    hung = sum(1 for t in trials if t.returncode in (None, 124))
    failed = sum(1 for t in trials if t.problems())
    return (f"{transport:9} {mode:10} {shm:4} {sig:6} {len(trials):6} "
            f"{fmt(statistics.median(delays) if delays else None):>8} "
            f"{fmt(max(delays) if delays else None):>6} {silent:6} {wrong:5} {crashed:7} "
            f"{left:4} {hung:4} {failed:6}")


if __name__ == "__main__":
    main()

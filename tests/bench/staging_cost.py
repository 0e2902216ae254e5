#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What staging costs on the host side: ResNet-50's 161 gradients (25.6 M float32)
allreduced once per step on N ranks, from plain host memory and from device memory of
the fake device (tests/plugins/fakedevice: its copies are memcpy on a worker thread, so
what remains is the library's own cost of staging: pinned buffers, queued copies, event
polling, one host collective). Alternating rounds, medians, the ratio. Prints figures,
never judges them.

  /usr/bin/python3 tests/bench/staging_cost.py [--ranks 2] [--rounds 3] [--steps 10]
  /usr/bin/python3 tests/bench/staging_cost.py --ordered   # as disttrain-train runs
"""
import argparse
import os
import pathlib
import statistics

from compare_gradients import REPO, clean_env, steps_per_s


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=pathlib.Path,
                   default=pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", default="10")
    p.add_argument("--ordered", action="store_true", help="DISTTRAIN_ORDERED=1 (no fusion)")
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()
    b = a.build_dir
    run = [b / "core/launch/disttrainrun", "-np", str(a.ranks), b / "tests/bench/grad_bench",
           "--steps", a.steps, "--warmup", "2"]
    env = clean_env({
        "DISTTRAIN_PLUGIN_PATH": f"{b / 'plugins/transport/tcp'}:{b / 'tests/plugins/fakedevice'}",
        "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_MEMORY": "fakedevice",
        "DISTTRAIN_FAKE_DEVICE_BYTES": str(512 << 20),  # the gradients take 103 MB
        "DISTTRAIN_ORDERED": "1" if a.ordered else "0"})
    runs = {"host memory": run, "fake device memory (staged)": run + ["--device"]}
    results = {k: [] for k in runs}
    for _ in range(a.rounds):
        for name, cmd in runs.items():
            value, _ = steps_per_s([str(c) for c in cmd], env, a.timeout)
            results[name].append(value)
    base = statistics.median(results["host memory"])
    print(f"ResNet-50 gradients, {a.ranks} ranks, {'ordered' if a.ordered else 'negotiated'}, "
          f"median of {a.rounds} alternating rounds")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"  {name:30s} {med:8.2f} steps/s   {med / base:5.2f}x host   "
              f"(rounds: {', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()

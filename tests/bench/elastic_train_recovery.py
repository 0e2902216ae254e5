#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Recovery time of disttrain-train --elastic on local ranks, and the cost of commits.

    /usr/bin/python3 tests/bench/elastic_train_recovery.py [--trials 20] [--ranks 4]
    /usr/bin/python3 tests/bench/elastic_train_recovery.py --overhead [--rounds 3]

Recovery: per scenario (one rank killed, rank 0 killed, two ranks killed at once), each
trial runs the mlp on a small Fashion-MNIST subset under disttrainrun --elastic with
victims that SIGKILL themselves mid-epoch (DISTTRAIN_TRAIN_KILL_AT/_RANKS). The victim
prints the wall-clock time of its kill, rank 0 the wall-clock time of the first step
completed after the re-form: their difference is the recovery time. Also the trainer's own
figures (failure seen -> re-formed and synced, -> first step) and the final validation
accuracy of each trial against undisturbed runs of the same seed. Medians and maxima.

--overhead: images/sec of undisturbed runs without --elastic and with --elastic
--commit-every 1 and 10, alternated per round, and the share of the run the trainer
itself counted in commits (steadier than images/sec on a loaded host). A benchmark: it
prints, never asserts.
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")).resolve()
TRAIN = BUILD / "models" / "programs" / "disttrain-train"
LAUNCH = BUILD / "core" / "launch" / "disttrainrun"
PLUGINS = f"{BUILD}/plugins/transport/tcp:{BUILD}/plugins/compute/onednn"

SCENARIOS = {"one rank": "1", "rank 0": "0", "two ranks": "1,2"}


def job(ranks, args, env, timeout=180):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DISTTRAIN_")}
    full_env.update({"DISTTRAIN_PLUGIN_PATH": PLUGINS, "DISTTRAIN_TIMEOUT": "30",
                     "DISTTRAIN_LOG_LEVEL": "warn", **env})
    cmd = [str(LAUNCH), "-np", str(ranks), "--elastic", "--", str(TRAIN), *args]
    return subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)


def train_args(metrics, epochs, extra=()):
    return ["--model", "mlp", "--epochs", str(epochs), "--batch-size", "25", "--seed", "3",
            "--train-limit", "4000", "--test-limit", "1000", "--threads", "1",
            "--no-progress", "--quiet", "--metrics-file", str(metrics), *extra]


def final_accuracy(metrics):
    lines = pathlib.Path(metrics).read_text().splitlines()
    return json.loads(lines[-1])["validation/main/accuracy"]


def trial(ranks, victims, kill_step, tmp):
    metrics = pathlib.Path(tmp) / "m.jsonl"
    env = {}
    if victims:
        env = {"DISTTRAIN_TRAIN_KILL_AT": f"step:{kill_step}",
               "DISTTRAIN_TRAIN_KILL_RANKS": victims}
    r = job(ranks, train_args(metrics, 2, ["--elastic"]), env)
    if r.returncode != 0:
        print(f"  failed (exit {r.returncode}):\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    out = {"accuracy": final_accuracy(metrics)}
    if victims:
        kills = [float(t) for t in re.findall(r"fault injection: SIGKILL .* unix time "
                                              r"([\d.]+)", r.stderr)]
        m = re.search(r"elastic: re-formed epoch \d+: size \d+ -> \d+ in ([\d.]+) ms, first "
                      r"step after ([\d.]+) ms \(.*unix time ([\d.]+)\)", r.stderr)
        if not kills or not m:
            print(f"  no kill or re-form line:\n{r.stderr[-2000:]}", file=sys.stderr)
            return None
        out["reformed_ms"] = float(m.group(1))
        out["first_step_ms"] = float(m.group(2))
        out["kill_to_step_ms"] = (float(m.group(3)) - min(kills)) * 1e3
    return out


def summary(name, values, unit="ms"):
    if not values:
        return f"{name}: no data"
    return (f"{name}: median {statistics.median(values):.1f} {unit}, max {max(values):.1f} "
            f"{unit}, min {min(values):.1f} {unit} (n={len(values)})")


def recovery(opts):
    steps_per_epoch = 4000 // (25 * opts.ranks)
    kill_step = steps_per_epoch + steps_per_epoch // 2  # mid-way through epoch 2
    with tempfile.TemporaryDirectory() as tmp:
        base = [trial(opts.ranks, "", kill_step, tmp) for _ in range(opts.baselines)]
        base_acc = [b["accuracy"] for b in base if b]
        print(f"undisturbed: validation accuracy {base_acc}")
        for name, victims in SCENARIOS.items():
            results = []
            for k in range(opts.trials):
                r = trial(opts.ranks, victims, kill_step, tmp)
                if r:
                    results.append(r)
            print(f"== {name} killed (ranks {victims}), {opts.ranks} ranks, "
                  f"{len(results)}/{opts.trials} trials finished")
            print("  " + summary("kill -> first step after the re-form",
                                 [r["kill_to_step_ms"] for r in results]))
            print("  " + summary("loss seen -> re-formed and synced",
                                 [r["reformed_ms"] for r in results]))
            print("  " + summary("loss seen -> first step", [r["first_step_ms"]
                                                            for r in results]))
            acc = [r["accuracy"] for r in results]
            if acc and base_acc:
                print(f"  final validation accuracy: median {statistics.median(acc):.4f} "
                      f"(min {min(acc):.4f}, max {max(acc):.4f}); undisturbed "
                      f"{statistics.median(base_acc):.4f}")


def overhead(opts):
    variants = {"no --elastic": [],
                "--elastic --commit-every 1": ["--elastic", "--commit-every", "1"],
                "--elastic --commit-every 10": ["--elastic", "--commit-every", "10"]}
    rates = {name: [] for name in variants}
    shares = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        metrics = pathlib.Path(tmp) / "m.jsonl"
        for _ in range(opts.rounds):
            for name, extra in variants.items():
                args = train_args(metrics, 2, extra)
                args[args.index("--train-limit") + 1] = "12000"
                r = job(opts.ranks, args, {})
                if r.returncode != 0:
                    print(f"{name} failed:\n{r.stderr[-2000:]}", file=sys.stderr)
                    continue
                lines = [json.loads(l) for l in metrics.read_text().splitlines()]
                rates[name].append(lines[-1]["images/sec"])
                m = re.search(r"commits took ([\d.]+) ms each, ([\d.]+)%", r.stderr)
                if m:
                    shares[name].append((float(m.group(1)), float(m.group(2))))
    base = statistics.median(rates["no --elastic"]) if rates["no --elastic"] else None
    for name, values in rates.items():
        if values:
            ratio = f", {statistics.median(values) / base:.3f}x no --elastic" if base else ""
            print(f"{name}: median {statistics.median(values):.0f} images/sec "
                  f"{[round(v) for v in values]}{ratio}")
        if shares[name]:
            print(f"  commits (the trainer's own count): median "
                  f"{statistics.median(ms for ms, _ in shares[name]):.2f} ms each, "
                  f"{statistics.median(pc for _, pc in shares[name]):.1f}% of the run")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--baselines", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    overhead(opts) if opts.overhead else recovery(opts)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""disttrain-perf: its command line and its correctness check (never its timings).

Every job is small (a few sizes, a few iterations) and runs under a hard timeout.
"""
import json

import pytest

from conftest import build_path, run

TIMEOUT_S = 90


def perf():
    return build_path("models", "tools", "disttrain-perf")


def perf_job(ranks, *flags):
    launcher = build_path("core", "launch", "disttrainrun")
    cmd = [launcher, "-np", ranks, "--no-tag-output", "--timeout", TIMEOUT_S - 10, "--",
           perf(), *flags]
    return run(cmd, env={"DISTTRAIN_TRANSPORT": "tcp"}, timeout=TIMEOUT_S)


@pytest.mark.parametrize("flags, complaint", [
    (["-d", "quad"], "quad"),
    (["-b", "12Q"], "12Q"),
    (["-e", "-5"], "-5"),
    (["-o", "median"], "median"),
    (["-c", "gather"], "gather"),
    (["-i", "2"], "--inplace"),
    (["-a", "yes"], "-a"),
    (["-b", "1M", "-e", "1K"], "--minbytes"),
    (["-f", "1"], "--stepfactor"),
    (["-n", "0"], "--iters"),
    (["-c", "alltoall", "-i", "1"], "in-place"),
    (["--csv", "--json"], "json"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_flags_exit_2_with_a_message(flags, complaint):
    result = run([perf(), *flags], timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert complaint in result.stderr, result.stderr


def test_help_exits_0():
    result = run([perf(), "--help"], timeout=30)
    assert result.returncode == 0
    assert "--minbytes" in result.stdout


def test_root_outside_the_job_is_a_usage_error():
    result = perf_job(2, "-c", "broadcast", "-r", "5", "-b", "8", "-e", "8")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--root 5" in result.stderr


@pytest.mark.parametrize("flags", [
    ["-c", "allreduce", "-d", "float", "-o", "sum"],
    ["-c", "allreduce", "-d", "int8", "-o", "prod", "-a", "1"],
    ["-c", "allreduce", "-d", "half", "-o", "avg", "-i", "1"],
    ["-c", "allreduce", "-d", "bfloat16", "-o", "max", "-a", "1", "-i", "1"],
    ["-c", "broadcast", "-d", "double", "-r", "1"],
    ["-c", "allgather", "-d", "int32", "-i", "1", "-a", "1"],
    ["-c", "reduce_scatter", "-d", "int64", "-o", "min"],
    ["-c", "alltoall", "-d", "uint8", "-a", "1"],
    ["-c", "barrier"],
], ids=lambda f: "_".join(f).replace("-", ""))
def test_runs_and_checks_every_collective(flags):
    result = perf_job(2, "-b", "8", "-e", "512K", "-f", "16", "-n", "3", "-w", "1",
                      "--json", *flags)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["ranks"] == 2 and doc["transport"] == "tcp"
    assert doc["wrong"] == 0
    rows = doc["rows"]
    assert rows, result.stdout
    if doc["collective"] != "barrier":
        assert rows[-1]["size"] > 100000  # the sizes went up to -e
    for row in rows:
        assert row["wrong"] == 0 and row["time_us"] > 0


def test_table_output_has_the_nccl_tests_columns():
    result = perf_job(2, "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-w", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any("2 ranks, transport tcp" in line for line in lines), result.stdout
    header = next(line for line in lines if "busbw(GB/s)" in line)
    for column in ("size", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)",
                   "#wrong"):
        assert column in header
    rows = [line.split() for line in lines if line and not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [1024, 2048, 4096]
    assert all(r[2] == "float32" and r[3] == "sum" and r[-1] == "0" for r in rows)

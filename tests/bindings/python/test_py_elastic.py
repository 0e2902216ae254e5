# SPDX-License-Identifier: Apache-2.0
"""disttrain.elastic through the Python binding: 3 ranks under disttrainrun --elastic,
one killed with SIGKILL mid-run; the survivors restore their last commit, re-form and
finish with the right result (jobs/elastic_job.py). Every job has a hard timeout."""
import re

import pytest

import dtpy

dtpy.use_build_tree()


def elastic_job(kind, victim, ordered="0", launcher_args=(), args=()):
    return dtpy.run_job("elastic_job.py", kind, victim, *args, np=3, timeout=120,
                        env={"DISTTRAIN_TIMEOUT": "30", "DISTTRAIN_ORDERED": ordered},
                        launcher_args=("--elastic", *launcher_args))


def survivors_ok(r, victim):
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    lines = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d)\] (OK .*)$",
                                                              r.stdout, re.M)}
    survivors = [rank for rank in range(3) if rank != victim]
    assert sorted(lines) == survivors, out
    for new_rank, old_rank in enumerate(survivors):
        assert lines[old_rank].startswith(f"OK rank={new_rank} size=2 steps=12"), out
    assert f"rank {victim} (host localhost" in r.stderr, r.stderr
    return lines


@pytest.mark.parametrize("ordered", ["0", "1"])
@pytest.mark.parametrize("victim", [0, 2])
def test_numpy_state_survives_a_killed_rank(victim, ordered):
    lines = survivors_ok(elastic_job("numpy", victim, ordered), victim)
    for line in lines.values():
        # 1 + 2 + ... + 12, and the re-formed job of 2 went back to the commit at step 6
        # (the victim died as step 7 began, so without the restore it would go on at 7).
        assert "value=78" in line and "resets=[(2, 6)]" in line, line


def test_torch_state_survives_a_killed_rank():
    pytest.importorskip("torch", reason="PyTorch is not installed")
    lines = survivors_ok(elastic_job("torch", 1), 1)
    assert len({line.split("value=")[1] for line in lines.values()}) == 1, lines


def test_a_replacement_joins_at_a_commit_and_the_job_ends_on_three_ranks():
    r = elastic_job("numpy", 1, launcher_args=("--max-restarts", "1"), args=("0.3",))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "started a replacement" in r.stderr, r.stderr
    ok = re.findall(r"^\[(\d)\] OK rank=(\d) size=(\d) steps=12 value=78", r.stdout, re.M)
    # Ranks 0 and 2 and the replacement (tagged [1], as the rank it replaces) end on 3.
    assert sorted(ok) == [("0", "0", "3"), ("1", "2", "3"), ("2", "1", "3")], out


def test_a_replacement_that_was_never_let_in_is_stopped_when_the_job_ends():
    # No pause: the survivors finish before the replacement has started Python.
    r = elastic_job("numpy", 1, launcher_args=("--max-restarts", "1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started a replacement" in r.stderr, r.stderr
    survivors_ok(r, 1)

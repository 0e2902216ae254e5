"""disttrain.elastic through the Python binding: 3 ranks under disttrainrun --elastic,
one killed with SIGKILL mid-run; the survivors restore their last commit, re-form and
finish with the right result (jobs/elastic_job.py). Every job has a hard timeout."""
import re

import pytest

import dtpy

dtpy.use_build_tree()


def elastic_job(kind, victim, ordered="0"):
    return dtpy.run_job("elastic_job.py", kind, victim, np=3, timeout=120,
                        env={"DISTTRAIN_TIMEOUT": "30", "DISTTRAIN_ORDERED": ordered},
                        launcher_args=("--elastic",))


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
